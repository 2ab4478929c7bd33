package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// keyed is a batch whose records all have keys.
func keyed(c Codec) Batch {
	return NewBatch(BuildOptions{Codec: c, FirstTimestamp: 1}, Record{Key: []byte("a"), Value: []byte("1")}, Record{Key: []byte{}, Value: nil})
}

// mutate copies b, applies f and, with fixCRC, restores a valid CRC so that
// the check under test is the one that fails.
func mutate(b Batch, fixCRC bool, f func(Batch) Batch) Batch {
	c := f(Batch(bytes.Clone(b)))
	if fixCRC {
		c.updateCRC()
	}
	return c
}

func put32(off int, v int32) func(Batch) Batch {
	return func(b Batch) Batch { binary.BigEndian.PutUint32(b[off:], uint32(v)); return b }
}

func TestValidateRejects(t *testing.T) {
	good := NewBatch(fullOptions(None), sampleRecords()...)
	gz := NewBatch(fullOptions(Gzip), sampleRecords()...)
	cases := []struct {
		name string
		b    Batch
		o    ValidateOptions
		want error
	}{
		{"empty", nil, ValidateOptions{}, ErrCorrupt},
		{"truncated header", good[:40], ValidateOptions{}, ErrCorrupt},
		{"truncated records", good[:len(good)-1], ValidateOptions{}, ErrCorrupt},
		{"trailing byte", append(bytes.Clone(good), 0), ValidateOptions{}, ErrCorrupt},
		{"flipped crc byte", mutate(good, false, func(b Batch) Batch { b[offCRC+2] ^= 0x40; return b }), ValidateOptions{}, ErrCorrupt},
		{"flipped value byte", mutate(good, false, func(b Batch) Batch { b[len(b)-3] ^= 1; return b }), ValidateOptions{}, ErrCorrupt},
		{"flipped compressed byte", mutate(gz, false, func(b Batch) Batch { b[HeaderSize+4] ^= 1; return b }), ValidateOptions{}, ErrCorrupt},
		{"magic 1", mutate(good, true, func(b Batch) Batch { b[offMagic] = 1; return b }), ValidateOptions{}, ErrUnsupportedMagic},
		{"magic 0 short", Batch(make([]byte, 26)), ValidateOptions{}, ErrUnsupportedMagic},
		{"magic 3", mutate(good, true, func(b Batch) Batch { b[offMagic] = 3; return b }), ValidateOptions{}, ErrCorrupt},
		{"length too small", mutate(good, true, put32(offBatchLength, 48)), ValidateOptions{}, ErrCorrupt},
		{"length negative", mutate(good, true, put32(offBatchLength, -1)), ValidateOptions{}, ErrCorrupt},
		{"length too big", mutate(good, true, put32(offBatchLength, int32(len(good)))), ValidateOptions{}, ErrCorrupt},
		{"too large", good, ValidateOptions{MaxBatchBytes: len(good) - 1}, ErrTooLarge},
		{"unknown codec", mutate(good, true, func(b Batch) Batch { b[offAttributes+1] |= 5; return b }), ValidateOptions{}, ErrCorrupt},
		{"count above delta", mutate(good, true, put32(offNumRecords, 6)), ValidateOptions{}, ErrInvalidRecord},
		{"count below delta", mutate(good, true, put32(offNumRecords, 4)), ValidateOptions{}, ErrInvalidRecord},
		{"zero count", mutate(good, true, func(b Batch) Batch { put32(offNumRecords, 0)(b); return put32(offLastOffsetDelta, -1)(b) }), ValidateOptions{}, ErrInvalidRecord},
		// Kafka's record iterator: records remaining after the count.
		{"wrong count, consistent delta", mutate(good, true, func(b Batch) Batch { put32(offNumRecords, 4)(b); return put32(offLastOffsetDelta, 3)(b) }), ValidateOptions{}, ErrInvalidRecord},
		{"count beyond the data", mutate(good, true, func(b Batch) Batch { put32(offNumRecords, 1000)(b); return put32(offLastOffsetDelta, 999)(b) }), ValidateOptions{}, ErrInvalidRecord},
		{"empty batch", NewBatch(BuildOptions{}), ValidateOptions{}, ErrInvalidRecord},
		{"control", NewBatch(BuildOptions{Control: true}, Record{Key: []byte{0, 0, 0, 0}}), ValidateOptions{}, ErrInvalidRecord},
		{"producer without sequence", NewBatch(BuildOptions{Idempotent: true, ProducerID: 5, BaseSequence: -1}, Record{}), ValidateOptions{}, ErrInvalidRecord},
		{"null key, uncompressed", good, ValidateOptions{RequireKeys: true}, ErrInvalidRecord},
		{"null key, gzip", gz, ValidateOptions{RequireKeys: true}, ErrInvalidRecord},
		{"bad record length", mutate(good, true, func(b Batch) Batch { b[HeaderSize] = 0x7f; return b }), ValidateOptions{}, ErrCorrupt},
		{"garbage records", mutate(keyed(None), true, func(b Batch) Batch {
			for i := HeaderSize; i < len(b); i++ {
				b[i] = 0xff
			}
			return b
		}), ValidateOptions{}, ErrCorrupt},
		{"undecompressable, keys required", mutate(gz, true, func(b Batch) Batch { b[HeaderSize] ^= 0xff; return b }), ValidateOptions{RequireKeys: true}, ErrCorrupt},
	}
	for _, tc := range cases {
		err := Validate(tc.b, tc.o)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate = %v, want %v", tc.name, err, tc.want)
		}
		if tc.want != ErrUnsupportedMagic && errors.Is(err, ErrUnsupportedMagic) {
			t.Errorf("%s: unexpected ErrUnsupportedMagic", tc.name)
		}
	}
}

func TestValidateKeyedCompressed(t *testing.T) {
	for _, c := range allCodecs {
		if err := Validate(keyed(c), ValidateOptions{RequireKeys: true, MaxBatchBytes: 1 << 20}); err != nil {
			t.Errorf("%s keyed batch: %v", c, err)
		}
	}
}

func TestValidateAllowControl(t *testing.T) {
	b := NewBatch(BuildOptions{Control: true, Transactional: true, Idempotent: true, ProducerID: 1}, Record{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}})
	if err := Validate(b, ValidateOptions{AllowControl: true}); err != nil {
		t.Fatal(err)
	}
}

func TestValidateUncompressedDoesNotAllocate(t *testing.T) {
	b := NewBatch(fullOptions(None), sampleRecords()...)
	k := keyed(None)
	allocs := testing.AllocsPerRun(100, func() {
		if Validate(b, ValidateOptions{MaxBatchBytes: 1 << 20}) != nil || Validate(k, ValidateOptions{RequireKeys: true}) != nil {
			panic("invalid")
		}
	})
	if allocs != 0 {
		t.Fatalf("Validate allocates %.1f times", allocs)
	}
}

func concat(bs ...Batch) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

func TestSplit(t *testing.T) {
	var bs []Batch
	for i, c := range allCodecs {
		bs = append(bs, NewBatch(BuildOptions{BaseOffset: int64(i * 10), Codec: c}, sampleRecords()...))
	}
	buf := concat(bs...)
	got, err := Split(buf)
	if err != nil || len(got) != len(bs) {
		t.Fatalf("Split = %d batches, %v", len(got), err)
	}
	for i := range got {
		if !bytes.Equal(got[i], bs[i]) || cap(got[i]) != len(got[i]) {
			t.Errorf("batch %d differs or has spare capacity", i)
		}
		if err := Validate(got[i], ValidateOptions{}); err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	}
	if got, err := Split(nil); err != nil || got != nil {
		t.Errorf("Split(nil) = %v, %v", got, err)
	}
	for _, n := range []int{1, 11, 12, len(buf) - 1} {
		if _, err := Split(buf[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Split of %d bytes: %v", n, err)
		}
	}
	bad := bytes.Clone(buf)
	binary.BigEndian.PutUint32(bad[len(bs[0])+offBatchLength:], 10)
	if _, err := Split(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Split with short length field: %v", err)
	}
}

// legacyMessage is a one-message v0 or v1 message set (offset 0) with a
// correct CRC-32.
func legacyMessage(magic byte, key, value []byte) []byte {
	m := []byte{0, 0, 0, 0, magic, 0} // CRC, magic, attributes
	if magic == 1 {
		m = binary.BigEndian.AppendUint64(m, 1) // timestamp
	}
	m = binary.BigEndian.AppendUint32(m, uint32(len(key)))
	m = append(m, key...)
	m = binary.BigEndian.AppendUint32(m, uint32(len(value)))
	m = append(m, value...)
	binary.BigEndian.PutUint32(m, crc32.ChecksumIEEE(m[4:]))
	out := binary.BigEndian.AppendUint64(nil, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(len(m)))
	return append(out, m...)
}

// TestSplitLegacyMessages checks Split's answers for v0/v1 message sets
// in Kafka's order: any whole legacy message is ErrUnsupportedMagic
// (INVALID_RECORD on produce), whether or not it is shorter than a v2
// header; one cut short is ErrTruncated; a length below a v0 message's
// overhead or an unknown magic is ErrCorrupt.
func TestSplitLegacyMessages(t *testing.T) {
	v0 := legacyMessage(0, []byte("k"), []byte("v"))
	v1 := legacyMessage(1, nil, nil)
	long := legacyMessage(1, []byte("k"), bytes.Repeat([]byte("v"), 60))
	magic3 := bytes.Clone(v0)
	magic3[offMagic] = 3
	under := bytes.Clone(v0)
	binary.BigEndian.PutUint32(under[offBatchLength:], 13)
	cases := []struct {
		name string
		buf  []byte
		want error
	}{
		{"v0, 16 bytes", v0, ErrUnsupportedMagic},
		{"v1, empty", v1, ErrUnsupportedMagic},
		{"v1, longer than a v2 header", long, ErrUnsupportedMagic},
		{"two v0 messages", append(bytes.Clone(v0), v0...), ErrUnsupportedMagic},
		{"v0 truncated after its magic", v0[:20], ErrTruncated},
		{"v1 truncated in its value", long[:len(long)-1], ErrTruncated},
		{"v0 truncated before its magic", v0[:14], ErrTruncated},
		{"length below a v0 overhead", under, ErrCorrupt},
		{"magic 3", magic3, ErrCorrupt},
	}
	for _, tc := range cases {
		got, err := Split(tc.buf)
		if !errors.Is(err, tc.want) || got != nil {
			t.Errorf("%s: Split = %d batches, %v; want %v", tc.name, len(got), err, tc.want)
		}
		if errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v does not wrap ErrCorrupt", tc.name, err)
		}
		if n, k := ValidPrefix(tc.buf); n != 0 || k != 0 {
			t.Errorf("%s: ValidPrefix = %d, %d; want 0, 0", tc.name, n, k)
		}
	}
}

func TestValidPrefix(t *testing.T) {
	a := NewBatch(BuildOptions{}, Record{Value: []byte("a")})
	b := NewBatch(BuildOptions{BaseOffset: 1, Codec: LZ4}, sampleRecords()...)
	c := NewBatch(BuildOptions{BaseOffset: 6}, Record{Value: []byte("c")})
	buf := concat(a, b, c)
	full := len(buf)
	cases := []struct {
		name    string
		buf     []byte
		n, nbat int
	}{
		{"whole", buf, full, 3},
		{"empty", nil, 0, 0},
		{"torn last", buf[:full-1], len(a) + len(b), 2},
		{"torn prefix of last", buf[:len(a)+len(b)+5], len(a) + len(b), 2},
		{"zero tail", append(bytes.Clone(buf), make([]byte, 100)...), full, 3},
		{"bad crc in middle", mutate(Batch(buf), false, func(x Batch) Batch { x[len(a)+HeaderSize+1] ^= 1; return x }), len(a), 1},
		{"old magic in middle", mutate(Batch(buf), false, func(x Batch) Batch { x[len(a)+offMagic] = 1; return x }), len(a), 1},
		{"bad first length", mutate(Batch(buf), false, func(x Batch) Batch { put32(offBatchLength, 1<<30)(x); return x }), 0, 0},
	}
	for _, tc := range cases {
		n, k := ValidPrefix(tc.buf)
		if n != tc.n || k != tc.nbat {
			t.Errorf("%s: ValidPrefix = %d, %d; want %d, %d", tc.name, n, k, tc.n, tc.nbat)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	for _, c := range []Codec{None, Zstd} {
		batch := keyed(c)
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(batch, ValidateOptions{RequireKeys: true, MaxBatchBytes: 1 << 20}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
