package segment

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data (and the metadata needed to read it, such as
// its size) to stable storage with fdatasync(2).
func fdatasync(f *os.File) error {
	return withFd(f, func(fd int) error {
		for {
			if err := unix.Fdatasync(fd); err != unix.EINTR {
				return err
			}
		}
	})
}

// withFd runs fn on f's descriptor and returns its error.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
