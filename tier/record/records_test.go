package record

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// numbered returns recs with OffsetDelta set as Build numbers them.
func numbered(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.OffsetDelta = int32(i)
		out[i] = r
	}
	return out
}

func TestRecordsRoundTripAllCodecs(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			in := sampleRecords()
			b := NewBatch(fullOptions(c), in...)
			if err := Validate(b, ValidateOptions{}); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := b.Records()
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			if want := numbered(in); !reflect.DeepEqual(got, want) {
				t.Fatalf("Records mismatch:\n got %+v\nwant %+v", got, want)
			}
			for i, r := range got {
				if b.Offset(r) != b.BaseOffset()+int64(i) {
					t.Errorf("Offset(record %d) = %d", i, b.Offset(r))
				}
				if b.Timestamp(r) != b.FirstTimestamp()+in[i].TimestampDelta {
					t.Errorf("Timestamp(record %d) = %d", i, b.Timestamp(r))
				}
			}
		})
	}
}

// TestFranzGoDecodesBuiltBatches checks Build against an independent
// decoder: franz-go's fetch parser, which verifies the CRC, decompresses
// and parses the records.
func TestFranzGoDecodesBuiltBatches(t *testing.T) {
	for _, c := range allCodecs {
		in := sampleRecords()
		opts := fullOptions(c)
		opts.Transactional = false
		b := NewBatch(opts, in...)
		b2 := NewBatch(BuildOptions{BaseOffset: b.LastOffset() + 1, Codec: c, FirstTimestamp: 5}, Record{Value: []byte("second")})
		rp := &kmsg.FetchResponseTopicPartition{HighWatermark: 1 << 62, RecordBatches: append(bytes.Clone(b), b2...)}
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: 0}, rp, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			t.Fatalf("%s: franz-go: %v", c, fp.Err)
		}
		if len(fp.Records) != len(in)+1 {
			t.Fatalf("%s: franz-go decoded %d records, want %d", c, len(fp.Records), len(in)+1)
		}
		for i, r := range fp.Records[:len(in)] {
			want := in[i]
			if r.Offset != opts.BaseOffset+int64(i) || r.Timestamp.UnixMilli() != opts.FirstTimestamp+want.TimestampDelta {
				t.Errorf("%s record %d: offset %d ts %d", c, i, r.Offset, r.Timestamp.UnixMilli())
			}
			if !bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) || (r.Key == nil) != (want.Key == nil) || (r.Value == nil) != (want.Value == nil) {
				t.Errorf("%s record %d: key %q value len %d", c, i, r.Key, len(r.Value))
			}
			if r.ProducerID != opts.ProducerID || r.ProducerEpoch != opts.ProducerEpoch || r.LeaderEpoch != opts.PartitionLeaderEpoch {
				t.Errorf("%s record %d: producer %d/%d leader epoch %d", c, i, r.ProducerID, r.ProducerEpoch, r.LeaderEpoch)
			}
			if len(r.Headers) != len(want.Headers) {
				t.Fatalf("%s record %d: %d headers", c, i, len(r.Headers))
			}
			for j, h := range r.Headers {
				if h.Key != want.Headers[j].Key || !bytes.Equal(h.Value, want.Headers[j].Value) {
					t.Errorf("%s record %d header %d: %q", c, i, j, h.Key)
				}
			}
		}
		if last := fp.Records[len(in)]; string(last.Value) != "second" || last.Offset != b.LastOffset()+1 {
			t.Errorf("%s: second batch record %q at %d", c, last.Value, last.Offset)
		}
	}
}

// TestParsesKmsgEncodedBatch checks the parser against batches encoded by
// kmsg, an independent encoder.
func TestParsesKmsgEncodedBatch(t *testing.T) {
	in := numbered(sampleRecords())
	var raw []byte
	for _, r := range in {
		kr := kmsg.Record{TimestampDelta64: r.TimestampDelta, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil)
		kr.Length = int32(len(body) - 1) // the zero Length took one byte
		raw = kr.AppendTo(raw)
	}
	kb := kmsg.RecordBatch{
		FirstOffset: 10, PartitionLeaderEpoch: 2, Magic: 2, LastOffsetDelta: int32(len(in) - 1),
		FirstTimestamp: 1000, MaxTimestamp: 1000 + 300000, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(in)), Records: raw,
	}
	kb.Length = int32(HeaderSize - 12 + len(raw))
	b := Batch(kb.AppendTo(nil))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	if err := Validate(b, ValidateOptions{}); err != nil {
		t.Fatalf("Validate kmsg batch: %v", err)
	}
	got, err := b.Records()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("mismatch:\n got %+v\nwant %+v", got, in)
	}
	opts := BuildOptions{BaseOffset: 10, PartitionLeaderEpoch: 2, FirstTimestamp: 1000}
	if ours := NewBatch(opts, sampleRecords()...); !bytes.Equal(ours, b) {
		t.Fatalf("Build differs from kmsg encoding:\n ours %x\nkmsg %x", []byte(ours), []byte(b))
	}
}

func TestBuildKeepsOffsetDeltas(t *testing.T) {
	recs := []Record{{OffsetDelta: 0, Key: []byte("a")}, {OffsetDelta: 3, Key: []byte("b")}, {OffsetDelta: 7, Key: []byte("c")}}
	b := NewBatch(BuildOptions{BaseOffset: 100, Codec: Zstd, LastOffsetDelta: 9}, recs...)
	if b.LastOffsetDelta() != 9 || b.LastOffset() != 109 || b.NumRecords() != 3 {
		t.Fatalf("lastOffsetDelta %d numRecords %d", b.LastOffsetDelta(), b.NumRecords())
	}
	got, err := b.Records()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("got %+v", got)
	}
	// A compacted batch fails client validation but is intact.
	if err := b.CheckCRC(); err != nil {
		t.Fatal(err)
	}
	if n, k := ValidPrefix(b); n != len(b) || k != 1 {
		t.Fatalf("ValidPrefix = %d, %d", n, k)
	}
}

func TestBuildFlagsAndEmpty(t *testing.T) {
	b := NewBatch(BuildOptions{Control: true, LogAppendTime: true, FirstTimestamp: 9})
	if !b.IsControl() || !b.LogAppendTime() || b.NumRecords() != 0 || b.MaxTimestamp() != 9 || len(b) != HeaderSize {
		t.Fatalf("empty control batch: attrs %#x records %d len %d", b.Attributes(), b.NumRecords(), len(b))
	}
	if recs, err := b.Records(); err != nil || len(recs) != 0 {
		t.Fatalf("Records of empty batch: %v, %v", recs, err)
	}
}

func TestBuildUnknownCodec(t *testing.T) {
	if _, err := Build(BuildOptions{Codec: 5}, nil); err == nil {
		t.Fatal("Build accepted codec 5")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("NewBatch did not panic on codec 7")
		}
	}()
	NewBatch(BuildOptions{Codec: 7})
}
