package e2e

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// TestBuildBatchDecodes guards the tests' batch builder: franz-go must
// read back what harness.BuildBatch writes, with a CRC it accepts.
func TestBuildBatchDecodes(t *testing.T) {
	raw := harness.BuildBatch(harness.BatchSpec{ProducerID: 7, Epoch: 1, Sequence: 5, FirstTs: 1000, Records: []harness.RawRecord{
		{Key: []byte("k"), Value: []byte("v"), TsDelta: 0}, {Key: nil, Value: []byte("second"), TsDelta: 9},
	}})
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if int(b.Length)+12 != len(raw) || b.NumRecords != 2 || b.MaxTimestamp != 1009 || b.FirstSequence != 5 {
		t.Fatalf("decoded header %+v", b)
	}
	if got := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(b.CRC) != got {
		t.Fatalf("crc %x, computed %x", uint32(b.CRC), got)
	}
	recs := decodeRecords(t, b)
	if len(recs) != 2 || string(recs[1].Value) != "second" || recs[1].Key != nil || recs[1].OffsetDelta != 1 {
		t.Fatalf("records %+v", recs)
	}
}

// decodeRecords parses the records of an uncompressed batch.
func decodeRecords(t testing.TB, b kmsg.RecordBatch) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	buf := b.Records
	for range b.NumRecords {
		n, used := binary.Varint(buf)
		if used <= 0 || int(n)+used > len(buf) {
			t.Fatalf("record length varint bad: %d/%d of %d bytes", n, used, len(buf))
		}
		var r kmsg.Record
		if err := r.ReadFrom(buf[:used+int(n)]); err != nil {
			t.Fatalf("decode record: %v", err)
		}
		out = append(out, r)
		buf = buf[used+int(n):]
	}
	return out
}
