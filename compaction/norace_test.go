//go:build !race

package compaction

// raceEnabled: see race_test.go.
const raceEnabled = false
