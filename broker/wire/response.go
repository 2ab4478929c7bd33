package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Region is a byte range of an open file that belongs in a response as the
// value of a records field; it is written with sendfile. Release is called
// once the bytes were written or the response was dropped.
type Region interface {
	Fd() uintptr
	Offset() int64
	Length() int64
	Release()
}

// MemRegion is a Region that may hold its bytes in memory (Mem's ok):
// those are written with write(2), and its Fd is not used.
type MemRegion interface {
	Region
	Mem() ([]byte, bool)
}

// Frame is an encoded response: Bufs and Regions interleave as
// Bufs[0], Regions[0], Bufs[1], Regions[1], …, Bufs[len(Regions)].
type Frame struct {
	Bufs    [][]byte
	Regions []Region
	pooled  *[]byte // Bufs[0], from respBufs: back there on Release
}

// respBufs pools the buffers of responses without regions (most responses
// but Fetch), which are small and many: one per OffsetCommit or Heartbeat.
var respBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// maxPooledResp bounds the buffers respBufs keeps.
const maxPooledResp = 64 << 10

// Size is the number of bytes the frame puts on the wire.
func (f *Frame) Size() int64 {
	var n int64
	for _, b := range f.Bufs {
		n += int64(len(b))
	}
	for _, r := range f.Regions {
		n += r.Length()
	}
	return n
}

// Release releases every region of the frame and its buffer: nothing may
// use the frame afterwards.
func (f *Frame) Release() {
	for _, r := range f.Regions {
		r.Release()
	}
	f.Regions = nil
	if f.pooled != nil && cap(*f.pooled) <= maxPooledResp {
		*f.pooled = (*f.pooled)[:0]
		respBufs.Put(f.pooled)
	}
	f.pooled, f.Bufs = nil, nil
}

// RawFrame is b as a bare size-prefixed frame, without a response header:
// the SASL tokens of a client that sent SaslHandshake v0.
func RawFrame(b []byte) *Frame {
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	return &Frame{Bufs: [][]byte{append(buf, b...)}}
}

// markerLen is the size of a placeholder written where a region goes.
const markerLen = 16

// Marker is a placeholder for a Region inside a kmsg response: set a records
// field to Marker.Bytes(i) for the i-th region before encoding.
type Marker struct{ prefix [markerLen - 4]byte }

// NewMarker returns a marker with a random prefix, so that placeholders
// cannot be confused with other response bytes.
func NewMarker() *Marker {
	m := &Marker{}
	_, _ = rand.Read(m.prefix[:])
	return m
}

// Bytes is the placeholder for region i.
func (m *Marker) Bytes(i int) []byte {
	b := make([]byte, markerLen)
	copy(b, m.prefix[:])
	binary.BigEndian.PutUint32(b[markerLen-4:], uint32(i))
	return b
}

// EncodeResponse encodes resp for the given correlation id into a frame.
// When regions are given, the response's records fields hold m.Bytes(i)
// placeholders; each is replaced by the region's bytes (and its length
// prefix rewritten) in the same order.
func EncodeResponse(corr int32, resp kmsg.Response, m *Marker, regions []Region) (*Frame, error) {
	var pooled *[]byte
	var buf []byte
	if len(regions) == 0 {
		pooled = respBufs.Get().(*[]byte)
		buf = append((*pooled)[:0], 0, 0, 0, 0, 0, 0, 0, 0)
	} else {
		buf = make([]byte, 8, 256)
	}
	if resp.IsFlexible() && resp.Key() != 18 { // ApiVersions always uses header v0
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[4:8], uint32(corr))
	f := &Frame{Regions: regions}
	if pooled != nil {
		*pooled, f.pooled = buf, pooled
	}
	flexible := resp.IsFlexible()
	rest := buf
	for i, r := range regions {
		ph := m.Bytes(i)
		at := bytes.Index(rest, ph)
		if at < 0 {
			return nil, fmt.Errorf("wire: placeholder %d not found in encoded response", i)
		}
		// Strip the placeholder's own length prefix and write the region's.
		var head []byte
		if flexible {
			head = rest[:at-1] // uvarint(17) is one byte
			head = binary.AppendUvarint(bytes.Clone(head), uint64(r.Length()+1))
		} else {
			head = rest[:at-4]
			head = binary.BigEndian.AppendUint32(bytes.Clone(head), uint32(r.Length()))
		}
		f.Bufs = append(f.Bufs, head)
		rest = rest[at+markerLen:]
	}
	f.Bufs = append(f.Bufs, rest)
	size := f.Size() - 4
	if size > 1<<31-1 {
		return nil, fmt.Errorf("wire: response of %d bytes too large", size)
	}
	binary.BigEndian.PutUint32(f.Bufs[0][0:4], uint32(size))
	return f, nil
}
