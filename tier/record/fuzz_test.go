package record

import (
	"errors"
	"reflect"
	"testing"
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
		if err != nil || (b.Codec() != None && !requireKeys) {
			return
		}
		// A valid batch whose records were checked must parse, and parse
		// to what Validate saw.
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
			if !errors.Is(err, ErrCorrupt) {
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
