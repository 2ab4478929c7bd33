//go:build race

package compaction

// raceEnabled: the race detector makes some codecs (lz4) very slow, so
// the property test runs fewer cases under it.
const raceEnabled = true
