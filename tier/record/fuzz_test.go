package record

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fuzzSeeds are valid batches of every codec, plus a few broken ones.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, c := range allCodecs {
		seeds = append(seeds, NewBatch(fullOptions(c), sampleRecords()...), keyed(c))
	}
	seeds = append(seeds, NewBatch(BuildOptions{Control: true}), []byte{}, make([]byte, HeaderSize))
	return seeds
}

func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, requireKeys bool) {
		b := Batch(data)
		err := Validate(b, ValidateOptions{RequireKeys: requireKeys, MaxBatchBytes: 1 << 20, AllowControl: true})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnsupportedMagic) {
				t.Fatalf("Validate returned a non-sentinel error: %v", err)
			}
		}
		recs, rerr := b.Records()
		if err != nil {
			return
		}
		// A valid batch must parse, and parse to what Validate saw.
		if rerr != nil {
			t.Fatalf("Validate passed but Records failed: %v", rerr)
		}
		if int32(len(recs)) != b.NumRecords() {
			t.Fatalf("Records returned %d of %d", len(recs), b.NumRecords())
		}
		for i, r := range recs {
			if requireKeys && r.Key == nil {
				t.Fatalf("record %d has a null key after RequireKeys", i)
			}
			if b.Codec() != None && r.OffsetDelta != int32(i) {
				t.Fatalf("compressed record %d has offset delta %d", i, r.OffsetDelta)
			}
		}
		// Re-encoding the parsed records gives a valid batch holding the
		// same records (bytes may differ: varints need not be minimal).
		re, err := Build(BuildOptions{LastOffsetDelta: b.LastOffsetDelta()}, recs)
		if err != nil {
			t.Fatal(err)
		}
		again, err := re.Records()
		if err != nil {
			t.Fatalf("re-encoded batch does not parse: %v", err)
		}
		if !allZeroDeltas(recs) && !reflect.DeepEqual(again, recs) {
			t.Fatalf("re-encoded records differ:\n%+v\n%+v", again, recs)
		}
	})
}

// allZeroDeltas reports records that Build would renumber 0..n-1.
func allZeroDeltas(recs []Record) bool {
	for _, r := range recs {
		if r.OffsetDelta != 0 {
			return false
		}
	}
	return len(recs) > 1
}

func FuzzSplit(f *testing.F) {
	seeds := fuzzSeeds()
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add(concat(Batch(seeds[0]), Batch(seeds[2]), Batch(seeds[4])))
	f.Fuzz(func(t *testing.T, data []byte) {
		batches, err := Split(data)
		n, count := ValidPrefix(data)
		if n < 0 || n > len(data) || count < 0 {
			t.Fatalf("ValidPrefix = %d, %d for %d bytes", n, count, len(data))
		}
		if rest, k := ValidPrefix(data[:n]); rest != n || k != count {
			t.Fatalf("ValidPrefix not idempotent: %d,%d then %d,%d", n, count, rest, k)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedMagic) {
				t.Fatalf("Split returned a non-sentinel error: %v", err)
			}
			return
		}
		total := 0
		for _, b := range batches {
			total += len(b)
			_, _ = b.Records()
		}
		if total != len(data) {
			t.Fatalf("Split covered %d of %d bytes", total, len(data))
		}
		if count > len(batches) {
			t.Fatalf("ValidPrefix found %d batches, Split %d", count, len(batches))
		}
	})
}

// FuzzScan checks the streaming record check against the decoder
// (Records' parser): on a records area in memory, read in small pieces,
// and compressed with each codec, scan must agree with parseRecords on
// whether the area holds n well-formed records; and the codecs' decoders,
// fed the fuzz bytes as compressed data, must fail only with sentinels,
// the lz4 one decoding only what pierrec/lz4 decodes alike.
func FuzzScan(f *testing.F) {
	for _, c := range allCodecs {
		b := NewBatch(BuildOptions{}, sampleRecords()...)
		f.Add([]byte(b[HeaderSize:]), uint16(b.NumRecords()), uint8(3), uint8(c))
	}
	f.Add([]byte{}, uint16(1), uint8(0), uint8(0))
	frame, _ := dependentFrame()
	f.Add(frame, uint16(1), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, area []byte, count uint16, piece, codec uint8) {
		n := int32(count)
		var inOrder bool
		var recs []Record
		parsed := checkCount(area, n) == nil
		if parsed {
			recs = make([]Record, n)
			parsed = parseRecords(area, recs) == nil
		}
		if parsed {
			inOrder = true
			for i, r := range recs {
				inOrder = inOrder && r.OffsetDelta == int32(i)
			}
		}
		check := func(name string, err error, o scanOptions) {
			t.Helper()
			want := parsed && (!o.inOrder || inOrder)
			if (err == nil) != want {
				t.Fatalf("%s: scan = %v, parse ok %v, in order %v", name, err, parsed, inOrder)
			}
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("%s: non-sentinel error %v", name, err)
			}
		}
		whole := scanner{cur: area}
		check("in memory", whole.scan(n, scanOptions{}), scanOptions{})
		size := int(piece%16) + 1
		pieces := scanner{r: &chunked{data: area, n: size}, buf: make([]byte, size)}
		check("in pieces", pieces.scan(n, scanOptions{inOrder: true}), scanOptions{inOrder: true})

		c := Codec(codec%4) + Gzip
		comp, err := compressors[c]()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		compressed, used := comp.Compress(&buf, area)
		if used != kgo.CompressionCodecType(c) {
			t.Fatalf("%s compression failed", c)
		}
		check(c.String(), scanCompressed(c, compressed, n), scanOptions{inOrder: true})

		// The fuzz bytes as compressed data: any verdict, but a sentinel.
		if err := scanCompressed(c, area, n); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%s decoding fuzz bytes: non-sentinel error %v", c, err)
		}
		// What the package's lz4 reader decodes, pierrec/lz4's (franz-go's)
		// decodes the same.
		if ours, err := decodeLZ4(area, 1<<20); err == nil {
			theirs, terr := io.ReadAll(io.LimitReader(lz4.NewReader(bytes.NewReader(area)), 1<<20+1))
			if terr != nil || !bytes.Equal(ours, theirs) {
				t.Fatalf("lz4: we decode %d bytes, pierrec %d bytes and %v", len(ours), len(theirs), terr)
			}
		}
	})
}

// scanCompressed checks n records in src, compressed with c, as Validate
// does, within 1 MiB.
func scanCompressed(c Codec, src []byte, n int32) error {
	sl := acquire()
	defer sl.release()
	r, err := sl.open(c, src, 1<<20)
	if err != nil {
		return err
	}
	s := newScanner(r, sl.buf)
	return s.scan(n, scanOptions{inOrder: true})
}
