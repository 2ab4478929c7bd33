package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
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
		if _, err := decompress(Snappy, bad, MaxDecompressedBytes); !errors.Is(err, ErrCorrupt) {
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
			if _, err := decompress(tc.c, tc.src, MaxDecompressedBytes); !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: %v", tc.name, err)
			}
		})
		if allocs > 100 {
			t.Errorf("%s: %v allocations", tc.name, allocs)
		}
	}
	// Blocks that only declare a size are corrupt: snappy cannot expand
	// a few bytes that far.
	for _, src := range [][]byte{huge, xhuge} {
		if _, err := decompress(Snappy, src, MaxDecompressedBytes); !errors.Is(err, ErrCorrupt) {
			t.Errorf("snappy: want ErrCorrupt, got %v", err)
		}
	}
}

// zstdRLEBomb hand-writes a zstd frame of RLE blocks without a declared
// content size: 4 bytes per block, each expanding to 128 KiB.
func zstdRLEBomb(out int) []byte { return zstdBomb(nil, out) }

// zstdBomb is zstdRLEBomb after a raw block holding head.
func zstdBomb(head []byte, out int) []byte {
	src := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	src = append(src, 0x00, 0x38) // no content size; window 128 KiB
	if len(head) > 0 {
		hdr := uint32(len(head) << 3) // raw block
		src = append(append(src, byte(hdr), byte(hdr>>8), byte(hdr>>16)), head...)
	}
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
	const limit = 1 << 20
	bomb := zstdRLEBomb(limit + 128<<10)
	if _, err := decompress(Zstd, bomb, limit); !errors.Is(err, ErrTooLarge) {
		t.Errorf("zstd bomb of %d bytes: %v", len(bomb), err)
	}
	if out, err := decompress(Zstd, zstdRLEBomb(limit), limit); err != nil || len(out) != limit {
		t.Fatalf("zstd RLE frame at the bound: %d bytes, %v", len(out), err)
	}
	for _, c := range []Codec{LZ4, Gzip, Snappy} {
		for _, size := range []int{limit, limit + 1} {
			out, err := decompress(c, compressWith(t, c, make([]byte, size)), limit)
			if size > limit && !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s: %d bytes decompressed: %v", c, size, err)
			}
			if size <= limit && (err != nil || len(out) != size) {
				t.Errorf("%s: %d bytes at the bound: %d, %v", c, size, len(out), err)
			}
		}
	}
}

// compressWith compresses data as producers do: lz4 in 64 KiB dependent
// blocks (Java's framing), gzip as one stream, snappy in xerial blocks.
func compressWith(t testing.TB, c Codec, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch c {
	case Snappy:
		return xerial(data, 32<<10)
	case LZ4:
		lw := lz4.NewWriter(&buf)
		if err := lw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true)); err != nil {
			t.Fatal(err)
		}
		w = lw
	case Gzip:
		w = gzip.NewWriter(&buf)
	case Zstd:
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	default:
		t.Fatalf("compressWith %s", c)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
