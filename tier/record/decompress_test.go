package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/pierrec/lz4/v4"
)

// xerial frames data as the Java client does, in blocks of size bytes.
func xerial(data []byte, size int) []byte {
	out := append(bytes.Clone(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1)
	for len(data) > 0 {
		n := min(size, len(data))
		block := s2.EncodeSnappy(nil, data[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		data = data[n:]
	}
	return out
}

func TestXerialSnappyBatch(t *testing.T) {
	plain := NewBatch(BuildOptions{}, sampleRecords()...)
	b := Batch(append(bytes.Clone(plain[:HeaderSize]), xerial(plain[HeaderSize:], 100)...))
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-lengthPrefix))
	b[offAttributes+1] |= byte(Snappy)
	b.updateCRC()
	if err := Validate(b, ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Records()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plain.Records()
	if len(got) != len(want) || !bytes.Equal(got[4].Value, want[4].Value) {
		t.Fatalf("xerial records differ")
	}
	for _, bad := range [][]byte{
		append(xerial([]byte("abc"), 10), 0, 0),          // truncated length
		append(xerial([]byte("abc"), 10), 0, 0, 0, 9, 1), // overrunning block
	} {
		if _, err := decompress(Snappy, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bad xerial: %v", err)
		}
	}
}

func TestDeclaredHugeSizesAreRefusedCheaply(t *testing.T) {
	huge := binary.AppendUvarint(nil, MaxDecompressedBytes+1)
	xhuge := append(bytes.Clone(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1)
	half := binary.AppendUvarint(nil, MaxDecompressedBytes/2) // blocks that only declare a size
	for range 3 {
		xhuge = binary.BigEndian.AppendUint32(xhuge, uint32(len(half)))
		xhuge = append(xhuge, half...)
	}
	// A zstd frame header declaring a 1 TiB single-segment frame.
	zhuge := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	zhuge = append(zhuge, 0xE0) // FCS field 8 bytes, single segment
	zhuge = binary.LittleEndian.AppendUint64(zhuge, 1<<40)
	zhuge = append(zhuge, 1, 0, 0) // a last, empty raw block
	cases := []struct {
		name string
		c    Codec
		src  []byte
	}{
		{"snappy", Snappy, huge},
		{"xerial", Snappy, xhuge},
		{"zstd", Zstd, zhuge},
	}
	for _, tc := range cases {
		allocs := testing.AllocsPerRun(1, func() {
			if _, err := decompress(tc.c, tc.src); !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: %v", tc.name, err)
			}
		})
		if allocs > 100 {
			t.Errorf("%s: %v allocations", tc.name, allocs)
		}
	}
	for _, src := range [][]byte{huge, xhuge} {
		if _, err := decompress(Snappy, src); !errors.Is(err, ErrTooLarge) {
			t.Errorf("snappy: want ErrTooLarge, got %v", err)
		}
	}
}

// zstdRLEBomb hand-writes a zstd frame of RLE blocks without a declared
// content size: 4 bytes per block, each expanding to 128 KiB.
func zstdRLEBomb(out int) []byte {
	src := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	src = append(src, 0x00, 0x38) // no content size; window 128 KiB
	const block = 128 << 10
	for n := 0; n < out; n += block {
		hdr := uint32(block<<3 | 1<<1) // RLE block
		if n+block >= out {
			hdr |= 1 // last block
		}
		src = append(src, byte(hdr), byte(hdr>>8), byte(hdr>>16), 0)
	}
	return src
}

func TestStreamingBombsStop(t *testing.T) {
	// Lower the bound to test with small data.
	defer func(old int) { maxDecompressed = old }(maxDecompressed)
	maxDecompressed = 1 << 20

	bomb := zstdRLEBomb(maxDecompressed + 128<<10)
	if _, err := decompress(Zstd, bomb); !errors.Is(err, ErrTooLarge) {
		t.Errorf("zstd bomb of %d bytes: %v", len(bomb), err)
	}
	if out, err := decompress(Zstd, zstdRLEBomb(maxDecompressed)); err != nil || len(out) != maxDecompressed {
		t.Fatalf("zstd RLE frame at the bound: %d bytes, %v", len(out), err)
	}
	writers := []struct {
		c  Codec
		mk func(io.Writer) io.WriteCloser
	}{
		{LZ4, func(w io.Writer) io.WriteCloser { return lz4.NewWriter(w) }},
		{Gzip, func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) }},
		{Snappy, nil},
	}
	for _, w := range writers {
		for _, size := range []int{maxDecompressed, maxDecompressed + 1} {
			data := make([]byte, size)
			var src []byte
			if w.mk == nil {
				src = xerial(data, 32<<10)
			} else {
				var buf bytes.Buffer
				enc := w.mk(&buf)
				if _, err := enc.Write(data); err != nil {
					t.Fatal(err)
				}
				if err := enc.Close(); err != nil {
					t.Fatal(err)
				}
				src = buf.Bytes()
			}
			out, err := decompress(w.c, src)
			if size > maxDecompressed && !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s: %d bytes decompressed: %v", w.c, size, err)
			}
			if size <= maxDecompressed && (err != nil || len(out) != size) {
				t.Errorf("%s: %d bytes at the bound: %d, %v", w.c, size, len(out), err)
			}
		}
	}
}
