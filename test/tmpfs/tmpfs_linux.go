package tmpfs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new temporary directory and
// returns its path; it is unmounted when the test ends. The test is
// skipped when this process may not mount.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("tmpfs: mounting needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("tmpfs: mount not permitted: %v", err)
		}
		t.Fatalf("tmpfs: mount on %s: %v", dir, err)
	}
	t.Cleanup(func() { Unmount(t, dir) })
	return dir
}

// Unmount unmounts dir, detaching it lazily when it is still busy (a
// broker process that did not exit).
func Unmount(t testing.TB, dir string) {
	t.Helper()
	err := syscall.Unmount(dir, 0)
	if errors.Is(err, syscall.EBUSY) {
		err = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, syscall.EINVAL) { // EINVAL: not mounted any more
		t.Errorf("tmpfs: unmount %s: %v", dir, err)
	}
}

// Resize changes the size of the tmpfs mounted on dir (a remount), as an
// operator growing a full volume would.
func Resize(t testing.TB, dir string, size int64) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("tmpfs: resize %s to %d bytes: %v", dir, size, err)
	}
}

// Fill writes a file of zeros at path until the filesystem is full (or
// max bytes were written) and returns how many bytes it holds; removing
// the file frees them again.
func Fill(t testing.TB, path string, max int64) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("tmpfs: fill %s: %v", path, err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for n < max {
		w, err := f.Write(buf[:min(int64(len(buf)), max-n)])
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatalf("tmpfs: fill %s: %v", path, err)
		}
	}
	return n
}
