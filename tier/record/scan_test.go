package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

var compressedCodecs = []Codec{Gzip, Snappy, LZ4, Zstd}

// withArea returns b with its records area replaced by area, stored as
// codec c, with length and CRC fixed: what a producer would send.
func withArea(b Batch, c Codec, area []byte) Batch {
	out := Batch(append(bytes.Clone(b[:HeaderSize]), area...))
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-lengthPrefix))
	attrs := uint16(out.Attributes())&^attrCodecMask | uint16(c)
	binary.BigEndian.PutUint16(out[offAttributes:], attrs)
	out.updateCRC()
	return out
}

// recompressed is b (uncompressed) with its records area compressed by c
// as a producer would, or replaced by area when given.
func recompressed(t testing.TB, b Batch, c Codec) Batch {
	return withArea(b, c, compressWith(t, c, b[HeaderSize:]))
}

// sized are n records with values of varied sizes, so that records span
// the pieces Validate reads decompressed data in.
func sized(n int, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, rng.IntN(3000))
		for j := range v {
			v[j] = byte('a' + rng.IntN(4)) // compressible, not trivially
		}
		recs[i] = Record{Key: fmt.Appendf(nil, "key-%d", i), Value: v, TimestampDelta: int64(i),
			Headers: []Header{{Key: "h", Value: v[:len(v)/10]}}}
	}
	return recs
}

func TestValidateGoodCompressedBatches(t *testing.T) {
	plain := NewBatch(BuildOptions{FirstTimestamp: 1}, sized(400, 1)...)
	opts := ValidateOptions{MaxBatchBytes: 1 << 20, RequireKeys: true}
	for _, c := range compressedCodecs {
		// franz-go's compressors (through Build), and the framing Java
		// and librdkafka use (xerial snappy, 64 KiB lz4 blocks, zstd
		// streamed without a content size).
		kgo := NewBatch(BuildOptions{Codec: c, FirstTimestamp: 1}, sized(400, 1)...)
		for name, b := range map[string]Batch{"franz-go": kgo, "stream": recompressed(t, plain, c)} {
			if err := Validate(b, opts); err != nil {
				t.Errorf("%s %s batch of %d records (%d bytes): %v", name, c, b.NumRecords(), len(plain), err)
			}
		}
	}
}

// TestValidateZstdStreamWindow checks a zstd frame as Java's zstd-jni
// writes it: no content size, and its level's window (here 4 MiB),
// larger than the topic's limit and than the data.
func TestValidateZstdStreamWindow(t *testing.T) {
	plain := NewBatch(BuildOptions{}, sized(50, 2)...)
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(4<<20), zstd.WithNoEntropyCompression(true))
	if err != nil {
		t.Fatal(err)
	}
	// Written in pieces, as a stream: the size is not known up front.
	area := plain[HeaderSize:]
	for len(area) > 0 {
		n := min(len(area), 1000)
		if _, err := w.Write(area[:n]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		area = area[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS || h.WindowSize < 4<<20 {
		t.Fatalf("frame header %+v, %v: want a 4 MiB window and no content size", h, err)
	}
	b := withArea(plain, Zstd, buf.Bytes())
	if err := Validate(b, ValidateOptions{MaxBatchBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
}

func TestValidateCompressedRejects(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	one := NewBatch(BuildOptions{FirstTimestamp: 1}, Record{Key: []byte("k"), Value: []byte("only")})
	two := NewBatch(BuildOptions{FirstTimestamp: 1}, Record{Key: []byte("a")}, Record{Key: []byte("b")})
	swapped := NewBatch(BuildOptions{FirstTimestamp: 1}, Record{Key: []byte("a")}, Record{OffsetDelta: 2, Key: []byte("b")}, Record{OffsetDelta: 1, Key: []byte("c")})
	for _, c := range compressedCodecs {
		garbage := bytes.Clone(noise)
		if c == Snappy {
			garbage[0] = 100 // a raw block declaring a plausible size
		}
		full := recompressed(t, two, c)
		cases := []struct {
			name string
			b    Batch
			want error
		}{
			{"random bytes", withArea(one, c, garbage), ErrCorrupt},
			{"truncated stream", withArea(two, c, full[HeaderSize:len(full)-4]), ErrCorrupt},
			{"trailing garbage", withArea(two, c, append(bytes.Clone(full[HeaderSize:]), noise[:64]...)), ErrCorrupt},
			{"truncated record", withArea(two, c, compressWith(t, c, two[HeaderSize:len(two)-1])), ErrCorrupt},
			{"claims 1000 records, holds 1", mutate(recompressed(t, one, c), true, func(b Batch) Batch {
				put32(offNumRecords, 1000)(b)
				return put32(offLastOffsetDelta, 999)(b)
			}), ErrInvalidRecord},
			{"claims 1 record, holds 2", mutate(recompressed(t, two, c), true, func(b Batch) Batch {
				put32(offNumRecords, 1)(b)
				return put32(offLastOffsetDelta, 0)(b)
			}), ErrInvalidRecord},
			{"offset deltas out of order", recompressed(t, swapped, c), ErrInvalidRecord},
		}
		for _, tc := range cases {
			if err := Validate(tc.b, ValidateOptions{MaxBatchBytes: 1 << 20}); !errors.Is(err, tc.want) {
				t.Errorf("%s, %s: Validate = %v, want %v", c, tc.name, err, tc.want)
			}
		}
	}
	// Kafka stores an uncompressed batch's offset deltas as they come.
	if err := Validate(swapped, ValidateOptions{}); err != nil {
		t.Errorf("uncompressed batch with deltas out of order: %v", err)
	}
}

// bombHead is the start of a records area holding one record whose value
// is size zero bytes: a well-formed record, so that a validator must
// inflate it to find out.
func bombHead(size int) []byte {
	body := binary.AppendVarint(nil, 0)           // timestampDelta
	body = binary.AppendVarint(body, 0)           // offsetDelta
	body = binary.AppendVarint(body, -1)          // null key
	body = binary.AppendVarint(body, int64(size)) // value length
	n := 1 + len(body) + size + varintSize(0)     // attributes, fields, value, header count
	return append(append(binary.AppendVarint(nil, int64(n)), 0), body...)
}

// bombs are batches of one record whose value inflates to 16 MiB; the
// zstd one (32 KiB of RLE blocks) to 1 GiB.
func bombs(t testing.TB) map[Codec]Batch {
	one := NewBatch(BuildOptions{}, Record{Value: []byte("x")})
	out := map[Codec]Batch{Zstd: withArea(one, Zstd, zstdBomb(bombHead(1<<30), 1<<30))}
	area := append(bombHead(16<<20), make([]byte, 16<<20+1)...) // value and header count
	for _, c := range []Codec{Gzip, Snappy, LZ4} {
		out[c] = withArea(one, c, compressWith(t, c, area))
	}
	return out
}

// allocated reports the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestBombsStopAtTheLimit(t *testing.T) {
	const maxBatch = 64 << 10 // records may inflate to InflateFactor times it: 1 MiB
	for c, b := range bombs(t) {
		Validate(b, ValidateOptions{MaxBatchBytes: maxBatch}) // warm the slot's decoders
		var err error
		n := allocated(func() { err = Validate(b, ValidateOptions{MaxBatchBytes: maxBatch}) })
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s bomb of %d bytes: %v, want ErrTooLarge", c, len(b), err)
		}
		if n > 1<<20 {
			t.Errorf("%s bomb of %d bytes: validating allocated %d bytes", c, len(b), n)
		}
		// Records keeps the output: a few times the limit as its buffer
		// grows, never the 16 MiB or 1 GiB.
		n = allocated(func() { _, err = b.RecordsWithin(maxBatch) })
		if !errors.Is(err, ErrTooLarge) || n > 8<<20 {
			t.Errorf("%s bomb: RecordsWithin(64 KiB) = %v after allocating %d bytes", c, err, n)
		}
	}
}

// TestParallelBombs is sixteen producers sending zstd bombs at once: the
// memory allocated stays in the order of the limit, not of the output.
func TestParallelBombs(t *testing.T) {
	b := bombs(t)[Zstd]
	var wg sync.WaitGroup
	n := allocated(func() {
		for range 16 {
			wg.Go(func() {
				if err := Validate(b, ValidateOptions{MaxBatchBytes: 1 << 20}); !errors.Is(err, ErrTooLarge) {
					t.Errorf("zstd bomb: %v", err)
				}
			})
		}
		wg.Wait()
	})
	if n > 32<<20 {
		t.Errorf("16 parallel zstd bombs allocated %d bytes", n)
	}
}

// TestDecompressionWaitsForASlot holds every slot: a compressed batch is
// not decompressed until one is free.
func TestDecompressionWaitsForASlot(t *testing.T) {
	held := make([]*slot, 0, cap(slots))
	for range cap(slots) {
		held = append(held, acquire())
	}
	b := keyed(Gzip)
	done := make(chan error, 1)
	go func() { done <- Validate(b, ValidateOptions{}) }()
	// A negative can only be observed for a while: 50 ms.
	select {
	case err := <-done:
		t.Fatalf("Validate finished (%v) while every slot was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	for _, s := range held {
		s.release()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Validate still waiting after the slots were released")
	}
	if len(slots) != cap(slots) {
		t.Fatalf("%d of %d slots free", len(slots), cap(slots))
	}
}

// chunked reads data n bytes at a time, to put piece boundaries
// everywhere.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[k:]
	return k, nil
}

func TestScanAcrossPieces(t *testing.T) {
	b := NewBatch(fullOptions(None), sampleRecords()...)
	area := b[HeaderSize:]
	for n := 1; n <= 12; n++ {
		s := scanner{r: &chunked{data: area, n: n}, buf: make([]byte, n)}
		if err := s.scan(b.NumRecords(), scanOptions{inOrder: true}); err != nil {
			t.Fatalf("pieces of %d bytes: %v", n, err)
		}
	}
}

func BenchmarkValidateCompressed(b *testing.B) {
	recs := sized(200, 3)
	for _, c := range allCodecs {
		batch := NewBatch(BuildOptions{Codec: c}, recs...)
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(NewBatch(BuildOptions{}, recs...))))
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(batch, ValidateOptions{MaxBatchBytes: 1 << 20}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
