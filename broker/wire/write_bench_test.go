package wire

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-broker/strata/internal/testcerts"
)

// BenchmarkWriteFrameTLS writes a Fetch-like frame (four 1 MiB file
// regions between small buffers) over a loopback TLS connection, whose
// reader discards it.
func BenchmarkWriteFrameTLS(b *testing.B) {
	ca, err := testcerts.NewCA("bench CA")
	if err != nil {
		b.Fatal(err)
	}
	pair, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "x"}, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair.TLS()}})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool()})
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	conn, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
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
	released := 0
	b.SetBytes(4 * region)
	b.ReportAllocs()
	for b.Loop() {
		fr := &Frame{Bufs: [][]byte{make([]byte, 60), make([]byte, 40), make([]byte, 40), make([]byte, 40), make([]byte, 8)}}
		for range 4 {
			fr.Regions = append(fr.Regions, fileRegion{f: f, n: region, released: &released})
		}
		if err := WriteFrame(conn, fr); err != nil {
			b.Fatal(err)
		}
	}
}
