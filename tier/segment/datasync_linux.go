package segment

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data (and the metadata needed to read it, such as
// its size) to stable storage with fdatasync(2).
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
