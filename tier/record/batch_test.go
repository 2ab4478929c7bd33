package record

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

var allCodecs = []Codec{None, Gzip, Snappy, LZ4, Zstd}

// sampleRecords covers null and empty keys and values, headers with null
// values, multi-byte varints and negative timestamp deltas.
func sampleRecords() []Record {
	big := bytes.Repeat([]byte("0123456789"), 40)
	return []Record{
		{Key: []byte("k0"), Value: []byte("v0")},
		{Key: nil, Value: []byte("null key")},
		{Key: []byte{}, Value: []byte{}, TimestampDelta: 5},
		{Key: []byte("tombstone"), Value: nil, TimestampDelta: -3},
		{Key: []byte("hdrs"), Value: big, TimestampDelta: 300000, Headers: []Header{
			{Key: "a", Value: []byte("1")},
			{Key: "", Value: nil},
			{Key: strings.Repeat("h", 200), Value: big},
		}},
	}
}

func fullOptions(c Codec) BuildOptions {
	return BuildOptions{
		BaseOffset:           1234567890123,
		PartitionLeaderEpoch: 17,
		Codec:                c,
		FirstTimestamp:       1700000000000,
		Transactional:        true,
		Idempotent:           true,
		ProducerID:           987654321,
		ProducerEpoch:        3,
		BaseSequence:         42,
	}
}

func TestAccessorsRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			recs := sampleRecords()
			b := NewBatch(fullOptions(c), recs...)
			checks := []struct {
				name      string
				got, want int64
			}{
				{"BaseOffset", b.BaseOffset(), 1234567890123},
				{"BatchLength", int64(b.BatchLength()), int64(len(b) - 12)},
				{"PartitionLeaderEpoch", int64(b.PartitionLeaderEpoch()), 17},
				{"Magic", int64(b.Magic()), 2},
				{"Codec", int64(b.Codec()), int64(c)},
				{"Attributes", int64(b.Attributes()), int64(c) | attrTransactional},
				{"LastOffsetDelta", int64(b.LastOffsetDelta()), int64(len(recs) - 1)},
				{"LastOffset", b.LastOffset(), 1234567890123 + int64(len(recs)-1)},
				{"FirstTimestamp", b.FirstTimestamp(), 1700000000000},
				{"MaxTimestamp", b.MaxTimestamp(), 1700000000000 + 300000},
				{"ProducerID", b.ProducerID(), 987654321},
				{"ProducerEpoch", int64(b.ProducerEpoch()), 3},
				{"BaseSequence", int64(b.BaseSequence()), 42},
				{"LastSequence", int64(b.LastSequence()), 42 + int64(len(recs)-1)},
				{"NumRecords", int64(b.NumRecords()), int64(len(recs))},
				{"CRC", int64(b.CRC()), int64(b.computeCRC())},
			}
			for _, ck := range checks {
				if ck.got != ck.want {
					t.Errorf("%s = %d, want %d", ck.name, ck.got, ck.want)
				}
			}
			if !b.IsTransactional() || b.IsControl() || b.LogAppendTime() || b.HasDeleteHorizon() {
				t.Errorf("flags: txn=%v control=%v lat=%v horizon=%v", b.IsTransactional(), b.IsControl(), b.LogAppendTime(), b.HasDeleteHorizon())
			}
			if err := Validate(b, ValidateOptions{}); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestSettersKeepCRCValid(t *testing.T) {
	b := NewBatch(fullOptions(None), sampleRecords()...)
	b.SetBaseOffset(99)
	b.SetPartitionLeaderEpoch(-5)
	if b.BaseOffset() != 99 || b.PartitionLeaderEpoch() != -5 {
		t.Fatalf("setters: base %d epoch %d", b.BaseOffset(), b.PartitionLeaderEpoch())
	}
	if err := Validate(b, ValidateOptions{}); err != nil {
		t.Fatalf("Validate after SetBaseOffset/SetPartitionLeaderEpoch: %v", err)
	}
	if b.LastOffset() != 99+int64(b.LastOffsetDelta()) {
		t.Errorf("LastOffset %d", b.LastOffset())
	}
}

func TestSetLogAppendTime(t *testing.T) {
	for _, c := range allCodecs {
		b := NewBatch(fullOptions(c), sampleRecords()...)
		oldCRC := b.CRC()
		b.SetLogAppendTime(1800000000000)
		if !b.LogAppendTime() || b.Codec() != c || !b.IsTransactional() {
			t.Fatalf("%s: attributes %#x after SetLogAppendTime", c, b.Attributes())
		}
		if b.FirstTimestamp() != 1800000000000 || b.MaxTimestamp() != 1800000000000 {
			t.Errorf("%s: timestamps %d/%d", c, b.FirstTimestamp(), b.MaxTimestamp())
		}
		if b.CRC() == oldCRC {
			t.Errorf("%s: CRC unchanged", c)
		}
		if err := Validate(b, ValidateOptions{RequireKeys: false}); err != nil {
			t.Fatalf("%s: Validate after SetLogAppendTime: %v", c, err)
		}
		recs, err := b.Records()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if ts := b.Timestamp(r); ts != 1800000000000 {
				t.Errorf("%s: record timestamp %d, want append time", c, ts)
			}
		}
	}
}

func TestSetLogAppendTimeKeepsDeleteHorizon(t *testing.T) {
	b := NewBatch(BuildOptions{FirstTimestamp: 555}, Record{Key: []byte("k")})
	b[offAttributes+1] |= attrDeleteHorizon
	b.SetLogAppendTime(777)
	if !b.HasDeleteHorizon() || b.FirstTimestamp() != 555 || b.MaxTimestamp() != 777 {
		t.Fatalf("horizon=%v first=%d max=%d", b.HasDeleteHorizon(), b.FirstTimestamp(), b.MaxTimestamp())
	}
	if err := b.CheckCRC(); err != nil {
		t.Fatal(err)
	}
}

func TestLastSequenceWraps(t *testing.T) {
	cases := []struct {
		base, delta, want int32
	}{
		{-1, 4, -1},
		{0, 0, 0},
		{10, 4, 14},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 2, 4, 1},
	}
	for _, tc := range cases {
		recs := make([]Record, tc.delta+1)
		b := NewBatch(BuildOptions{Idempotent: true, ProducerID: 1, BaseSequence: tc.base}, recs...)
		if got := b.LastSequence(); got != tc.want {
			t.Errorf("LastSequence(base %d, delta %d) = %d, want %d", tc.base, tc.delta, got, tc.want)
		}
	}
}

func TestNotIdempotentWritesMinusOne(t *testing.T) {
	b := NewBatch(BuildOptions{ProducerID: 7, BaseSequence: 3}, Record{})
	if b.ProducerID() != -1 || b.ProducerEpoch() != -1 || b.BaseSequence() != -1 || b.LastSequence() != -1 {
		t.Fatalf("producer fields %d/%d/%d", b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
	}
}

func TestShortBatchAccessorsDoNotPanic(t *testing.T) {
	full := NewBatch(fullOptions(None), Record{Value: []byte("x")})
	for n := 0; n < HeaderSize; n++ {
		b := Batch(bytes.Clone(full[:n]))
		_ = b.BaseOffset() + b.LastOffset() + b.FirstTimestamp() + b.MaxTimestamp() + b.ProducerID()
		_ = b.BatchLength() + b.PartitionLeaderEpoch() + b.LastOffsetDelta() + b.BaseSequence() + b.LastSequence() + b.NumRecords()
		_ = int(b.Magic()) + int(b.CRC()) + int(b.Attributes()) + int(b.ProducerEpoch()) + int(b.Codec())
		_ = b.LogAppendTime() || b.IsTransactional() || b.IsControl() || b.HasDeleteHorizon()
		b.SetBaseOffset(1)
		b.SetPartitionLeaderEpoch(1)
		b.SetLogAppendTime(1)
		if _, err := b.Records(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Records on %d bytes: %v", n, err)
		}
		if err := b.CheckCRC(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("CheckCRC on %d bytes: %v", n, err)
		}
	}
}

func TestAccessorsDoNotAllocate(t *testing.T) {
	b := NewBatch(fullOptions(None), sampleRecords()...)
	var sink int64
	allocs := testing.AllocsPerRun(100, func() {
		sink += b.BaseOffset() + b.LastOffset() + int64(b.NumRecords()) + int64(b.LastSequence()) + int64(b.CRC())
		b.SetBaseOffset(5)
		b.SetPartitionLeaderEpoch(6)
		b.SetLogAppendTime(7)
	})
	if allocs != 0 {
		t.Fatalf("accessors allocate %.1f times", allocs)
	}
	_ = sink
}

func TestCodecString(t *testing.T) {
	want := []string{"none", "gzip", "snappy", "lz4", "zstd", "unknown"}
	for i, w := range want {
		if got := Codec(i).String(); got != w {
			t.Errorf("Codec(%d) = %q, want %q", i, got, w)
		}
	}
}
