package segment

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writeback of f's dirty pages in [off, off+n)
// without waiting for it (sync_file_range(2)).
func startWriteback(f *os.File, off, n int64) {
	_ = withFd(f, func(fd int) error { return unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE) })
}

// dropCache drops f's clean pages in [off, off+n) from the page cache
// (posix_fadvise(2) POSIX_FADV_DONTNEED).
func dropCache(f *os.File, off, n int64) {
	_ = withFd(f, func(fd int) error { return unix.Fadvise(fd, off, n, unix.FADV_DONTNEED) })
}
