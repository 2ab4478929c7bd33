package group

import (
	"errors"
	"testing"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// boundedLog is a testLog whose high watermark is set by the test.
type boundedLog struct {
	*testLog
	hw int64
}

func (bl *boundedLog) Read(offset int64, maxBytes int) (segment.Slice, error) {
	return bl.L.Read(offset, maxBytes, bl.hw)
}
func (bl *boundedLog) HighWatermark() int64 { return bl.hw }

// TestLoadStopsWhereTheCleanerEmptiedTheTail: the cleaner may leave no
// batch between some offset and the high watermark (every record there
// superseded or an expired tombstone, down to a segment with no batch at
// all); loading reads up to there and succeeds, as Kafka's loader does.
func TestLoadStopsWhereTheCleanerEmptiedTheTail(t *testing.T) {
	tl := openTestLog(t, t.TempDir())
	tl.L.SetConfig(local.Config{SegmentBytes: 512})
	commit := func(group string, off int64) {
		t.Helper()
		_, r := offsetRecord(nil, group, tp0, &Offset{Offset: off, LeaderEpoch: -1, ExpireTimestamp: -1})
		if _, err := tl.Append([]record.Batch{record.NewBatch(record.BuildOptions{FirstTimestamp: 1}, r)}, 1); err != nil {
			t.Fatal(err)
		}
	}
	// Commit i is at log offset i.
	for i := 0; len(tl.L.Segments()) < 2; i++ {
		commit("kept", int64(i))
	}
	for i := 0; len(tl.L.Segments()) < 3; i++ {
		commit("gone", int64(i))
	}
	segs := tl.L.Segments()
	want := segs[1].BaseOffset - 1 // the last commit of "kept" in the first segment
	// The cleaner emptied the last sealed segment; the high watermark is
	// at the active segment's base.
	cleaned, err := tl.L.CreateCleaned(segs[1].BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(cleaned.Seal(), cleaned.Flush()); err != nil {
		t.Fatal(err)
	}
	if err := tl.L.ReplaceSegments(segs[1:2], cleaned); err != nil {
		t.Fatal(err)
	}
	st, err := readLog(&boundedLog{testLog: tl, hw: segs[2].BaseOffset})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if got := st.offsets["kept"][tp0].Offset; got != want || len(st.offsets["gone"]) != 0 {
		t.Fatalf("loaded offset %d of kept (want %d), %d of gone", got, want, len(st.offsets["gone"]))
	}
}
