package wire

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
)

// Sizes of TLSBase's buffers. A TLS record carries at most 16 KiB, and
// crypto/tls reads and writes the connection under it once per record
// (reads more than once when a record's bytes arrive in parts); these
// buffers let one system call carry several records.
const (
	tlsReadBufSize   = 256 << 10
	tlsGatherBufSize = 256 << 10
)

// tlsBufs are TLSBase's read and gather buffers, shared by all
// connections: a connection holds one only while it has bytes in it.
var tlsBufs = sync.Pool{New: func() any { b := make([]byte, tlsReadBufSize); return &b }}

// TLSBase is a TCP connection meant to go under a server-side tls.Conn
// (tls.Server(NewTLSBase(c), cfg)). Reads fill a pooled buffer with as
// many records as the socket holds, so a request costs a few read(2)
// calls rather than one or two per record; WriteFrame gathers the records
// of one response and writes them in few write(2) calls (see Gather).
// An idle connection holds no buffer.
//
// Concurrency: reads belong to the tls.Conn's reader and writes to its
// writer; the write side has its own lock, since a Close on another
// goroutine may write a close_notify alert during a gathered frame.
type TLSBase struct {
	net.Conn

	rbuf *[]byte // unread bytes rbuf[r:w]; nil when there are none
	r, w int

	wmu       sync.Mutex
	gathering bool    // guarded by wmu
	wbuf      *[]byte // gathered bytes, len is what is pending; guarded by wmu
}

// NewTLSBase wraps c, the TCP connection of a TLS server.
func NewTLSBase(c net.Conn) *TLSBase { return &TLSBase{Conn: c} }

// Read returns buffered bytes, refilling the buffer with one read of the
// socket when it is empty; a read at least as large as the buffer goes
// straight to the socket.
func (t *TLSBase) Read(p []byte) (int, error) {
	if t.rbuf == nil {
		if len(p) >= tlsReadBufSize {
			return t.Conn.Read(p)
		}
		b := tlsBufs.Get().(*[]byte)
		n, err := t.Conn.Read(*b)
		if n <= 0 {
			tlsBufs.Put(b)
			return 0, err
		}
		t.rbuf, t.r, t.w = b, 0, n
		// An error with bytes is returned by the next read, which finds
		// the buffer empty and meets it again.
	}
	n := copy(p, (*t.rbuf)[t.r:t.w])
	t.r += n
	if t.r == t.w {
		tlsBufs.Put(t.rbuf)
		t.rbuf = nil
	}
	return n, nil
}

// Write writes b, or appends it to the gathered bytes while Gather is on
// (first writing those out when b would not fit).
func (t *TLSBase) Write(b []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if !t.gathering {
		return t.Conn.Write(b)
	}
	if t.wbuf != nil && len(*t.wbuf)+len(b) > cap(*t.wbuf) {
		if err := t.flushLocked(); err != nil {
			return 0, err
		}
	}
	if len(b) >= tlsGatherBufSize {
		return t.Conn.Write(b)
	}
	if t.wbuf == nil {
		t.wbuf = tlsBufs.Get().(*[]byte)
		*t.wbuf = (*t.wbuf)[:0]
	}
	*t.wbuf = append(*t.wbuf, b...)
	return len(b), nil
}

// Gather makes writes from now on collect in a pooled buffer until
// Flush: the TLS records of one response then leave in one write(2) per
// tlsGatherBufSize bytes instead of one per record.
func (t *TLSBase) Gather() {
	t.wmu.Lock()
	t.gathering = true
	t.wmu.Unlock()
}

// Flush writes the gathered bytes out and ends gathering.
func (t *TLSBase) Flush() error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.gathering = false
	return t.flushLocked()
}

// flushLocked writes the gathered bytes and gives their buffer back;
// t.wmu must be held.
func (t *TLSBase) flushLocked() error {
	if t.wbuf == nil {
		return nil
	}
	b := t.wbuf
	t.wbuf = nil
	_, err := t.Conn.Write(*b)
	*b = (*b)[:cap(*b)]
	tlsBufs.Put(b)
	if err != nil {
		return fmt.Errorf("write gathered records: %w", err)
	}
	return nil
}

// tlsBaseOf is the TLSBase under conn, when conn is a tls.Conn over one.
func tlsBaseOf(conn net.Conn) *TLSBase {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return nil
	}
	t, _ := tc.NetConn().(*TLSBase)
	return t
}
