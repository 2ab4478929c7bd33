package wire

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
)

// errShortSendfile means a region's file shrank while it was being sent; the
// response is then incomplete and the connection must be closed.
var errShortSendfile = errors.New("wire: file region shorter than announced")

// copyBufSize is the buffer a frame goes through on a connection without
// a file descriptor: four TLS records.
const copyBufSize = 64 << 10

// copyWriters are the buffered writers of writeCopied, reused across
// frames and connections.
var copyWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, copyBufSize) }}

// WriteFrame writes f to conn. On a kernel socket, byte buffers go out
// with write(2) and regions with sendfile. On another connection (TLS),
// where every Write is at least one record and one system call, the
// frame goes through one pooled buffer: small parts are gathered and
// regions read straight into it.
func WriteFrame(conn net.Conn, f *Frame) error {
	defer f.Release()
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return writeCopied(conn, f)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return writeCopied(conn, f)
	}
	for i, b := range f.Bufs {
		if _, err := conn.Write(b); err != nil {
			return fmt.Errorf("write response: %w", err)
		}
		if i < len(f.Regions) {
			if err := writeRegion(conn, raw, f.Regions[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeRegion(conn net.Conn, raw syscall.RawConn, r Region) error {
	if b, ok := memOf(r); ok {
		if _, err := conn.Write(b); err != nil {
			return fmt.Errorf("write region: %w", err)
		}
		return nil
	}
	return sendfile(raw, r)
}

// memOf is a region's bytes when it holds them in memory.
func memOf(r Region) ([]byte, bool) {
	if m, ok := r.(MemRegion); ok {
		return m.Mem()
	}
	return nil, false
}

// writeCopied writes f to conn through a pooled buffered writer; a
// tls.Conn over a TLSBase gathers the frame's records there.
func writeCopied(conn net.Conn, f *Frame) error {
	if base := tlsBaseOf(conn); base != nil {
		base.Gather()
		err := writeBuffered(conn, f)
		if ferr := base.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("write response: %w", ferr)
		}
		return err
	}
	return writeBuffered(conn, f)
}

// writeBuffered writes f to conn through a pooled buffered writer.
func writeBuffered(conn net.Conn, f *Frame) error {
	bw := copyWriters.Get().(*bufio.Writer)
	bw.Reset(conn)
	defer func() {
		bw.Reset(nil)
		copyWriters.Put(bw)
	}()
	for i, b := range f.Bufs {
		if _, err := bw.Write(b); err != nil {
			return fmt.Errorf("write response: %w", err)
		}
		if i >= len(f.Regions) {
			continue
		}
		if b, ok := memOf(f.Regions[i]); ok {
			if _, err := bw.Write(b); err != nil {
				return fmt.Errorf("write region: %w", err)
			}
		} else if err := copyRegion(bw, f.Regions[i]); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
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

// copyRegion reads a region's bytes from its file straight into bw's
// free space, for connections without a file descriptor.
func copyRegion(bw *bufio.Writer, r Region) error {
	off, left := r.Offset(), r.Length()
	for left > 0 {
		if bw.Available() == 0 {
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("write region: %w", err)
			}
		}
		buf := bw.AvailableBuffer()[:min(int64(bw.Available()), left)]
		got, err := syscall.Pread(int(r.Fd()), buf, off)
		if err != nil {
			return fmt.Errorf("read region: %w", err)
		}
		if got == 0 {
			return errShortSendfile
		}
		if _, err := bw.Write(buf[:got]); err != nil {
			return fmt.Errorf("write region: %w", err)
		}
		off += int64(got)
		left -= int64(got)
	}
	return nil
}
