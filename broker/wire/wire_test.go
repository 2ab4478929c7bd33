package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodeRequest frames req the way a client does.
func encodeRequest(req kmsg.Request, corr int32, clientID string) []byte {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	return formatter.AppendRequest(nil, req, corr)
}

func TestParseRoundTrip(t *testing.T) {
	for _, v := range []int16{0, 3, 9, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr("orders")
		req.Topics = append(req.Topics, topic)
		framed := encodeRequest(req, 42, "cli")
		frame, err := ReadFrame(bytes.NewReader(framed), 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		h, body, err := ParseHeader(frame)
		if err != nil {
			t.Fatal(err)
		}
		if h.Key != 3 || h.Version != v || h.CorrelationID != 42 || h.ClientID != "cli" {
			t.Fatalf("v%d: header %+v", v, h)
		}
		got, err := DecodeBody(h, body)
		if err != nil {
			t.Fatal(err)
		}
		if ts := got.(*kmsg.MetadataRequest).Topics; len(ts) != 1 || *ts[0].Topic != "orders" {
			t.Fatalf("v%d: topics %+v", v, ts)
		}
	}
}

func TestReadFrameTooLarge(t *testing.T) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], 1<<30)
	_, err := ReadFrame(bytes.NewReader(b[:]), 1024, nil)
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("got %v", err)
	}
}

type fileRegion struct {
	f        *os.File
	off, n   int64
	released *int
}

func (r fileRegion) Fd() uintptr   { return r.f.Fd() }
func (r fileRegion) Offset() int64 { return r.off }
func (r fileRegion) Length() int64 { return r.n }
func (r fileRegion) Release()      { *r.released++ }

// TestFetchRegionsOverTCP encodes a Fetch response whose records live in a
// file and checks that a client decodes the bytes it would have got inline.
func TestFetchRegionsOverTCP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	data := bytes.Repeat([]byte("0123456789abcdef"), 10000)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	for _, v := range []int16{4, 11, 12, 16} {
		released := 0
		m := NewMarker()
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(v)
		topic := kmsg.NewFetchResponseTopic()
		topic.Topic = "t"
		var regions []Region
		for i := range 3 {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(i)
			p.RecordBatches = m.Bytes(i)
			topic.Partitions = append(topic.Partitions, p)
			regions = append(regions, fileRegion{f: f, off: int64(i * 1000), n: int64(1000 + i*50000), released: &released})
		}
		resp.Topics = append(resp.Topics, topic)
		frame, err := EncodeResponse(7, resp, m, regions)
		if err != nil {
			t.Fatal(err)
		}

		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			done <- WriteFrame(c, frame)
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadFrame(c, 1<<30, nil)
		c.Close()
		ln.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if released != 3 {
			t.Fatalf("released %d regions", released)
		}
		if corr := int32(binary.BigEndian.Uint32(got)); corr != 7 {
			t.Fatalf("corr %d", corr)
		}
		body := got[4:]
		if resp.IsFlexible() {
			body = body[1:]
		}
		dec := kmsg.NewPtrFetchResponse()
		dec.SetVersion(v)
		if err := dec.ReadFrom(body); err != nil {
			t.Fatalf("v%d decode: %v", v, err)
		}
		for i, p := range dec.Topics[0].Partitions {
			want := data[i*1000 : i*1000+1000+i*50000]
			if !bytes.Equal(p.RecordBatches, want) {
				t.Fatalf("v%d partition %d: %d bytes, want %d", v, i, len(p.RecordBatches), len(want))
			}
		}
	}
}

func TestCopyRegionFallback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(path, []byte("hello world"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	n := 0
	var out bytes.Buffer
	bw := bufio.NewWriterSize(&out, 16) // smaller than the region's bytes: flushes midway
	if err := copyRegion(bw, fileRegion{f: f, off: 2, n: 9, released: &n}); err != nil || bw.Flush() != nil {
		t.Fatal(err)
	}
	if out.String() != "llo world" {
		t.Fatalf("got %q", out.String())
	}
	out.Reset()
	bw.Reset(&out)
	if _, err := bw.WriteString("0123456789abc"); err != nil { // 3 bytes free
		t.Fatal(err)
	}
	if err := copyRegion(bw, fileRegion{f: f, off: 6, n: 5, released: &n}); err != nil || bw.Flush() != nil {
		t.Fatal(err)
	}
	if out.String() != "0123456789abcworld" {
		t.Fatalf("got %q", out.String())
	}
	if err := copyRegion(bufio.NewWriter(io.Discard), fileRegion{f: f, off: 6, n: 50, released: &n}); !errors.Is(err, errShortSendfile) {
		t.Fatalf("short region: %v", err)
	}
}

// FuzzDecodeRequest feeds arbitrary frames through header parsing and body
// decoding: any input must give a request or an error, never a panic.
func FuzzDecodeRequest(f *testing.F) {
	seeds := []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest(), kmsg.NewPtrCreateTopicsRequest()}
	for _, req := range seeds {
		for _, v := range []int16{0, req.MaxVersion()} {
			req.SetVersion(v)
			f.Add(encodeRequest(req, 1, "fuzz")[4:])
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := ParseHeader(frame)
		if err != nil {
			return
		}
		_, _ = DecodeBody(h, body)
	})
}
