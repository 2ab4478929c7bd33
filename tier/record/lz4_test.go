package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
)

func TestXXH32(t *testing.T) {
	// Reference values of XXH32 with seed 0.
	for in, want := range map[string]uint32{"": 0x02CC5D05, "a": 0x550D7456, "abc": 0x32D153FF} {
		if got := xxh32Sum([]byte(in)); got != want {
			t.Errorf("xxh32(%q) = %#x, want %#x", in, got, want)
		}
	}
	// Written in pieces or at once, the same sum.
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var x xxh32
	x.reset()
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+len(rest)%13)
		x.write(rest[:n])
		rest = rest[n:]
	}
	if x.sum() != xxh32Sum(data) {
		t.Fatal("xxh32 differs when written in pieces")
	}
}

// decodeLZ4 reads src through the package's lz4 reader.
func decodeLZ4(src []byte, limit int) ([]byte, error) {
	var r lz4Reader
	r.reset(src, limit)
	return io.ReadAll(&r)
}

// pierrecLZ4 writes data as pierrec/lz4's Writer does with opts.
func pierrecLZ4(t testing.TB, data []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestLZ4ReaderDecodesPierrecFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte('a' + rng.IntN(3))
	}
	for _, bs := range []lz4.BlockSize{lz4.Block64Kb, lz4.Block256Kb, lz4.Block1Mb, lz4.Block4Mb} {
		for _, ck := range []bool{false, true} {
			for _, size := range []bool{false, true} {
				opts := []lz4.Option{lz4.BlockSizeOption(bs), lz4.BlockChecksumOption(ck), lz4.ChecksumOption(!ck)}
				if size {
					opts = append(opts, lz4.SizeOption(uint64(len(data))))
				}
				out, err := decodeLZ4(pierrecLZ4(t, data, opts...), 1<<20)
				if err != nil || !bytes.Equal(out, data) {
					t.Errorf("block size %v, block checksums %v, content size %v: %d bytes, %v", bs, ck, size, len(out), err)
				}
			}
		}
	}
	incompressible := make([]byte, 100<<10) // stored in raw blocks
	for i := range incompressible {
		incompressible[i] = byte(rng.Uint32())
	}
	if out, err := decodeLZ4(pierrecLZ4(t, incompressible, lz4.BlockSizeOption(lz4.Block64Kb)), 1<<20); err != nil || !bytes.Equal(out, incompressible) {
		t.Errorf("raw blocks: %d bytes, %v", len(out), err)
	}
}

// dependentFrame is a frame of two blocks, the second copying 8 bytes
// that the first decoded: blocks that are not independent, as the LZ4
// library writes by default.
func dependentFrame() (frame, content []byte) {
	first := []byte("0123456789abcdef")
	block1 := append([]byte{0xF0, byte(len(first) - 15)}, first...) // 16 literals
	// A match of 8 bytes 10 back (into the first block), then 5 literals.
	block2 := []byte{0x04, 10, 0, 0x50, 'v', 'w', 'x', 'y', 'z'}
	desc := []byte{0x40 | lz4FlagContent, 0x40} // version 1, dependent, 64 KiB blocks
	content = append(append(bytes.Clone(first), first[6:14]...), "vwxyz"...)
	frame = binary.LittleEndian.AppendUint32(nil, lz4Magic)
	frame = append(append(frame, desc...), byte(xxh32Sum(desc)>>8))
	for _, b := range [][]byte{block1, block2} {
		frame = append(binary.LittleEndian.AppendUint32(frame, uint32(len(b))), b...)
	}
	frame = binary.LittleEndian.AppendUint32(frame, 0)
	return binary.LittleEndian.AppendUint32(frame, xxh32Sum(content)), content
}

func TestLZ4ReaderDependentBlocks(t *testing.T) {
	frame, content := dependentFrame()
	out, err := decodeLZ4(frame, 1<<20)
	if err != nil || !bytes.Equal(out, content) {
		t.Fatalf("dependent blocks: %q, %v; want %q", out, err, content)
	}
	theirs, err := io.ReadAll(lz4.NewReader(bytes.NewReader(frame)))
	if err != nil || !bytes.Equal(theirs, content) {
		t.Fatalf("pierrec reads the frame as %q, %v", theirs, err)
	}
}

func TestLZ4ReaderRejects(t *testing.T) {
	good := pierrecLZ4(t, bytes.Repeat([]byte("kafka "), 1000), lz4.BlockChecksumOption(true))
	frame, _ := dependentFrame()
	flip := func(b []byte, i int) []byte { b = bytes.Clone(b); b[i] ^= 1; return b }
	cases := map[string][]byte{
		"empty":                {},
		"bad magic":            flip(good, 0),
		"descriptor checksum":  flip(good, 6),
		"block checksum":       flip(good, len(good)-9),
		"content checksum":     flip(frame, len(frame)-1),
		"truncated":            good[:len(good)-1],
		"data after the frame": append(bytes.Clone(good), 0),
		"two frames":           append(bytes.Clone(good), good...),
		"legacy frame":         binary.LittleEndian.AppendUint32(nil, 0x184C2102),
	}
	for name, src := range cases {
		if _, err := decodeLZ4(src, 1<<20); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	big := pierrecLZ4(t, make([]byte, 2<<20))
	if _, err := decompress(LZ4, big, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("2 MiB frame under a 1 MiB limit: %v", err)
	}
	declared := pierrecLZ4(t, make([]byte, 2<<20), lz4.SizeOption(2<<20))
	if _, err := decompress(LZ4, declared, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("frame declaring 2 MiB under a 1 MiB limit: %v", err)
	}
}

// TestLZ4ReaderKeepsItsBuffers: once warm, a slot decodes lz4 without
// allocating, whatever the garbage collector did meanwhile.
func TestLZ4ReaderKeepsItsBuffers(t *testing.T) {
	b := NewBatch(BuildOptions{Codec: LZ4}, sized(300, 5)...)
	for range cap(slots) {
		if err := Validate(b, ValidateOptions{MaxBatchBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	// TotalAlloc counts the whole process: the least of a few runs leaves
	// out what other goroutines allocated meanwhile.
	n := uint64(math.MaxUint64)
	for range 5 {
		n = min(n, allocated(func() { _ = Validate(b, ValidateOptions{MaxBatchBytes: 1 << 20}) }))
	}
	if n > 4096 {
		t.Fatalf("validating a warm lz4 batch allocated %d bytes", n)
	}
}
