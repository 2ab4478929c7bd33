package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// errShortSendfile means a region's file shrank while it was being sent; the
// response is then incomplete and the connection must be closed.
var errShortSendfile = errors.New("wire: file region shorter than announced")

// WriteFrame writes f to conn. Byte buffers go out with writev; regions go
// out with sendfile when conn is a kernel socket, else through a copy.
func WriteFrame(conn net.Conn, f *Frame) error {
	defer f.Release()
	for i, b := range f.Bufs {
		if _, err := conn.Write(b); err != nil {
			return fmt.Errorf("write response: %w", err)
		}
		if i < len(f.Regions) {
			if err := writeRegion(conn, f.Regions[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeRegion(conn net.Conn, r Region) error {
	if m, ok := r.(MemRegion); ok {
		if b, ok := m.Mem(); ok {
			if _, err := conn.Write(b); err != nil {
				return fmt.Errorf("write region: %w", err)
			}
			return nil
		}
	}
	if sc, ok := conn.(syscall.Conn); ok {
		raw, err := sc.SyscallConn()
		if err == nil {
			return sendfile(raw, r)
		}
	}
	return copyRegion(conn, r)
}

// sendfile moves the region from its file to the socket in the kernel.
func sendfile(raw syscall.RawConn, r Region) error {
	off, left := r.Offset(), r.Length()
	var serr error
	err := raw.Write(func(fd uintptr) bool {
		for left > 0 {
			chunk := left
			if chunk > 1<<30 {
				chunk = 1 << 30
			}
			n, err := syscall.Sendfile(int(fd), int(r.Fd()), &off, int(chunk))
			if n > 0 {
				left -= int64(n)
			}
			switch {
			case err == syscall.EAGAIN:
				return false // wait until the socket is writable
			case err == syscall.EINTR:
				continue
			case err != nil:
				serr = fmt.Errorf("sendfile: %w", err)
				return true
			case n == 0:
				serr = errShortSendfile
				return true
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("sendfile: %w", err)
	}
	return serr
}

// copyRegion is the fallback for connections without a file descriptor.
func copyRegion(w io.Writer, r Region) error {
	buf := make([]byte, 64<<10)
	off, left := r.Offset(), r.Length()
	for left > 0 {
		n := int64(len(buf))
		if n > left {
			n = left
		}
		got, err := syscall.Pread(int(r.Fd()), buf[:n], off)
		if err != nil {
			return fmt.Errorf("read region: %w", err)
		}
		if got == 0 {
			return errShortSendfile
		}
		if _, err := w.Write(buf[:got]); err != nil {
			return fmt.Errorf("write region: %w", err)
		}
		off += int64(got)
		left -= int64(got)
	}
	return nil
}
