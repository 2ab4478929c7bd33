package wire

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-broker/strata/internal/testcerts"
)

// tlsPair is a loopback TLS connection: server over a TLSBase when base
// is set, over the bare TCP connection otherwise; counted, when not nil,
// counts the server's system calls under it all.
func tlsPair(tb testing.TB, base bool, counted *countingConn) (server, client *tls.Conn) {
	tb.Helper()
	ca, err := testcerts.NewCA("wire CA")
	if err != nil {
		tb.Fatal(err)
	}
	pair, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "x"}, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	dialed := make(chan *tls.Conn, 1)
	go func() {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool()})
		if err != nil {
			tb.Error(err)
		}
		dialed <- c
	}()
	raw, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	var under net.Conn = raw
	if counted != nil {
		counted.Conn = raw
		under = counted
	}
	if base {
		under = NewTLSBase(under)
	}
	server = tls.Server(under, &tls.Config{Certificates: []tls.Certificate{pair.TLS()}})
	if err := server.Handshake(); err != nil {
		tb.Fatal(err)
	}
	client = <-dialed
	if client == nil {
		tb.FailNow()
	}
	tb.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// frameOf is a size-prefixed frame of n bytes counting from seed.
func frameOf(n int, seed byte) []byte {
	b := make([]byte, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	for i := range n {
		b[4+i] = seed + byte(i)
	}
	return b
}

// TestTLSBaseReadsFrames: request frames of sizes around the TLS record
// and buffer sizes arrive whole and in order through a TLSBase.
func TestTLSBaseReadsFrames(t *testing.T) {
	server, client := tlsPair(t, true, nil)
	sizes := []int{8, 100, 16 << 10, 16<<10 + 1, tlsReadBufSize - 1, tlsReadBufSize, tlsReadBufSize + 7, 3 << 20, 9}
	sent := make(chan error, 1)
	go func() {
		for i, n := range sizes {
			if _, err := client.Write(frameOf(n, byte(i))); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	br := bufio.NewReaderSize(server, 64<<10)
	for i, n := range sizes {
		got, err := ReadFrame(br, 8<<20, nil)
		if err != nil {
			t.Fatalf("frame %d (%d bytes): %v", i, n, err)
		}
		if want := frameOf(n, byte(i))[4:]; !bytes.Equal(got, want) {
			t.Fatalf("frame %d: got %d bytes, want %d, or different bytes", i, len(got), len(want))
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if base := tlsBaseOf(server); base == nil || base.rbuf != nil {
		t.Fatalf("after the last frame the base holds a read buffer (%v)", base)
	}
}

// TestTLSBaseWritesFrames: Fetch-like frames (buffers and file regions)
// written over a TLSBase arrive as the same bytes, and the gathered
// buffer is given back after each frame.
func TestTLSBaseWritesFrames(t *testing.T) {
	server, client := tlsPair(t, true, nil)
	data := bytes.Repeat([]byte("0123456789abcdef"), (600<<10)/16)
	path := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	released := 0
	frames := []*Frame{
		{Bufs: [][]byte{[]byte("small")}},
		{Bufs: [][]byte{[]byte("head"), []byte("mid"), []byte("tail")},
			Regions: []Region{fileRegion{f: f, off: 3, n: 100, released: &released}, fileRegion{f: f, off: 0, n: int64(len(data)), released: &released}}},
		{Bufs: [][]byte{bytes.Repeat([]byte{7}, tlsGatherBufSize+1)}},
	}
	var want bytes.Buffer
	for _, fr := range frames {
		for i, b := range fr.Bufs {
			want.Write(b)
			if i < len(fr.Regions) {
				r := fr.Regions[i].(fileRegion)
				want.Write(data[r.off : r.off+r.n])
			}
		}
	}
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, want.Len())
		n, _ := io.ReadFull(client, b)
		got <- b[:n]
	}()
	base := tlsBaseOf(server)
	for i, fr := range frames {
		if err := WriteFrame(server, fr); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if base.wbuf != nil || base.gathering {
			t.Fatalf("frame %d: the base still gathers after WriteFrame", i)
		}
	}
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("client read %d bytes, not the %d written", len(b), want.Len())
	}
	if released != 2 {
		t.Fatalf("released %d regions, want 2", released)
	}
}

// TestTLSBaseCloseDuringWrites: closing the tls.Conn (which writes a
// close_notify alert) while another goroutine writes frames is safe.
func TestTLSBaseCloseDuringWrites(t *testing.T) {
	server, client := tlsPair(t, true, nil)
	go func() { _, _ = io.Copy(io.Discard, client) }()
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 50 {
			if err := WriteFrame(server, &Frame{Bufs: [][]byte{make([]byte, 100<<10)}}); err != nil {
				return
			}
		}
	})
	_ = server.Close()
	wg.Wait()
}

// countingConn counts the Read and Write calls on its connection.
type countingConn struct {
	net.Conn
	reads, writes atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReadFrameTLS reads 1 MiB request frames, as a broker reads a
// Produce, over loopback TLS, with the server on a TLSBase ("base") and
// on the bare connection ("bare"); cpu-ms/MiB is the process's CPU
// (client writing and encrypting, server reading and decrypting),
// steadier than ns/op on a shared machine.
func BenchmarkReadFrameTLS(b *testing.B) {
	for _, mode := range []struct {
		name string
		base bool
	}{{"bare", false}, {"base", true}} {
		b.Run(mode.name, func(b *testing.B) {
			counted := &countingConn{}
			server, client := tlsPair(b, mode.base, counted)
			frame := frameOf(1<<20, 0)
			go func() {
				for {
					if _, err := client.Write(frame); err != nil {
						return
					}
				}
			}()
			br := bufio.NewReaderSize(server, 64<<10)
			buf := make([]byte, 1<<20)
			b.SetBytes(1 << 20)
			cpu, reads := cpuTime(), counted.reads.Load()
			for b.Loop() {
				var err error
				if buf, err = ReadFrame(br, 2<<20, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/MiB")
			b.ReportMetric(float64(counted.reads.Load()-reads)/float64(b.N), "reads/MiB")
		})
	}
}

// BenchmarkWriteFrameTLSBase is BenchmarkWriteFrameTLS with the server
// on a TLSBase ("base") and on the bare connection ("bare"), reporting
// the process's CPU per MiB as well.
func BenchmarkWriteFrameTLSBase(b *testing.B) {
	const region = 1 << 20
	path := filepath.Join(b.TempDir(), "seg")
	if err := os.WriteFile(path, make([]byte, region), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, mode := range []struct {
		name string
		base bool
	}{{"bare", false}, {"base", true}} {
		b.Run(mode.name, func(b *testing.B) {
			counted := &countingConn{}
			server, client := tlsPair(b, mode.base, counted)
			go func() { _, _ = io.Copy(io.Discard, client) }()
			released := 0
			b.SetBytes(4 * region)
			b.ReportAllocs()
			cpu, writes := cpuTime(), counted.writes.Load()
			for b.Loop() {
				fr := &Frame{Bufs: [][]byte{make([]byte, 60), make([]byte, 40), make([]byte, 40), make([]byte, 40), make([]byte, 8)}}
				for range 4 {
					fr.Regions = append(fr.Regions, fileRegion{f: f, n: region, released: &released})
				}
				if err := WriteFrame(server, fr); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(4*b.N), "cpu-ms/MiB")
			b.ReportMetric(float64(counted.writes.Load()-writes)/float64(4*b.N), "writes/MiB")
		})
	}
}
