//go:build unix

package partition

import "golang.org/x/sys/unix"

// openFileLimit is the soft RLIMIT_NOFILE, 0 when it cannot be read.
func openFileLimit() uint64 {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Cur
}
