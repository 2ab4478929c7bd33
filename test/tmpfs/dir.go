package tmpfs

import (
	"os"
	"testing"
)

// Dir is a new directory on the machine's shared tmpfs (/dev/shm) where
// it has one, else in the system's temporary directory; it is removed
// when the test ends. It is for tests whose files are scratch (a broker's
// logs in a handler test): a disk's fsyncs would have them wait on I/O
// most of their time. It needs no mount and no root. Its name does not
// carry the test's, so that it can stand in a comma-separated list
// (log.dirs).
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "strata-test-")
	if err != nil {
		if dir, err = os.MkdirTemp("", "strata-test-"); err != nil {
			t.Fatalf("tmpfs: scratch directory: %v", err)
		}
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
