package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

// sized frames body behind its size prefix.
func sized(size int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	return append(b, body...)
}

// TestReadFrameAnnouncedSizeNotAllocated: a frame that announces 100 MiB
// and sends 10 bytes makes ReadFrame allocate about its first chunk, not
// the announced size.
func TestReadFrameAnnouncedSizeNotAllocated(t *testing.T) {
	in := sized(100<<20, []byte("0123456789"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bufio.NewReader(bytes.NewReader(in)), 100<<20, nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want an unexpected EOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("allocated %d bytes for a frame that sent 10 of them", grew)
	}
}

// TestReadFrameGrows: frames whose bytes arrive a few at a time read back
// whole, from a fresh buffer, into a spare that is large enough, and into
// one that is too small (which it starts from and outgrows).
func TestReadFrameGrows(t *testing.T) {
	for _, size := range []int{8, 1000, firstChunk, firstChunk + 1, 3*firstChunk + 17} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(i * 7)
		}
		for _, spare := range [][]byte{nil, make([]byte, 10), make([]byte, firstChunk+5), make([]byte, size)} {
			r := iotest.HalfReader(bytes.NewReader(sized(int32(size), body)))
			got, err := ReadFrame(r, 1<<30, spare)
			if err != nil {
				t.Fatalf("size %d, spare %d: %v", size, len(spare), err)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("size %d, spare %d: frame differs", size, len(spare))
			}
			if cap(spare) >= size && &got[0] != &spare[0] {
				t.Errorf("size %d, spare %d: not read into the spare", size, len(spare))
			}
		}
	}
}

// TestReadFrameEnds: a stream that ends between frames gives io.EOF; one
// that ends within a frame's size or body, io.ErrUnexpectedEOF; with and
// without a bufio.Reader.
func TestReadFrameEnds(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"between frames", nil, io.EOF},
		{"within the size", []byte{0, 0}, io.ErrUnexpectedEOF},
		{"before the body", sized(20, nil), io.ErrUnexpectedEOF},
		{"within the body", sized(20, []byte("abc")), io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		for _, buffered := range []bool{false, true} {
			var r io.Reader = bytes.NewReader(c.in)
			if buffered {
				r = bufio.NewReader(r)
			}
			if _, err := ReadFrame(r, 1<<20, nil); !errors.Is(err, c.want) {
				t.Errorf("%s (bufio %v): %v, want %v", c.name, buffered, err, c.want)
			}
		}
	}
}

// countingBudget records what ReadFrameWithin asks of its budget.
type countingBudget struct {
	waits, added int
	failAt       int // Wait fails on this call (0: never)
}

var errPaused = errors.New("paused for good")

func (b *countingBudget) Wait() error {
	b.waits++
	if b.waits == b.failAt {
		return errPaused
	}
	return nil
}

func (b *countingBudget) Add(n int) { b.added += n }

// TestReadFrameWithinBudget: every read of a frame's body waits on the
// budget first and is counted in it; a failing Wait abandons the frame
// with the bytes read so far counted.
func TestReadFrameWithinBudget(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 3*firstChunk)
	in := sized(int32(len(body)), body)

	var b countingBudget
	got, err := ReadFrameWithin(iotest.OneByteReader(bytes.NewReader(in)), 1<<20, nil, &b)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read: %v", err)
	}
	if b.added != len(body) || b.waits != len(body) {
		t.Fatalf("budget: %d waits, %d bytes added, want %d of each", b.waits, b.added, len(body))
	}

	b = countingBudget{failAt: 4}
	if _, err := ReadFrameWithin(iotest.OneByteReader(bytes.NewReader(in)), 1<<20, nil, &b); !errors.Is(err, errPaused) {
		t.Fatalf("err = %v, want the budget's", err)
	}
	if b.added != 3 {
		t.Fatalf("added %d bytes before the failing wait, want 3", b.added)
	}
}
