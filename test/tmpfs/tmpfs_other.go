//go:build !linux

package tmpfs

import "testing"

// Mount skips the test: tmpfs mounts are Linux-only.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	t.Skip("tmpfs: mounting needs Linux")
	return ""
}

// Unmount does nothing outside Linux.
func Unmount(testing.TB, string) {}

// Resize skips the test outside Linux.
func Resize(t testing.TB, _ string, _ int64) { t.Skip("tmpfs: needs Linux") }

// Fill skips the test outside Linux.
func Fill(t testing.TB, _ string, _ int64) int64 {
	t.Skip("tmpfs: needs Linux")
	return 0
}
