package wire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"testing"
)

// frameStream serves one frame over and over, at most chunk bytes per
// Read, as a socket hands over what has arrived.
type frameStream struct {
	frame []byte
	off   int
	chunk int
}

func (s *frameStream) Read(p []byte) (int, error) {
	if s.off == len(s.frame) {
		s.off = 0
	}
	n := min(len(p), len(s.frame)-s.off, s.chunk)
	copy(p, s.frame[s.off:s.off+n])
	s.off += n
	return n, nil
}

// BenchmarkReadFrame reads request frames of several sizes through a
// connection-sized bufio.Reader, with a fresh buffer per frame and with
// the previous frame's buffer reused (a frame a handler released).
func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{128, 16 << 10, 1 << 20} {
		frame := make([]byte, 4+size)
		binary.BigEndian.PutUint32(frame, uint32(size))
		for _, reuse := range []bool{false, true} {
			b.Run(fmt.Sprintf("size=%d/reuse=%v", size, reuse), func(b *testing.B) {
				br := bufio.NewReaderSize(&frameStream{frame: frame, chunk: 64 << 10}, 64<<10)
				b.SetBytes(int64(len(frame)))
				b.ReportAllocs()
				var spare []byte
				for b.Loop() {
					got, err := ReadFrame(br, 100<<20, spare)
					if err != nil {
						b.Fatal(err)
					}
					if reuse {
						spare = got
					}
				}
			})
		}
	}
}
