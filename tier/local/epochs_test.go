package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-broker/strata/tier/record"
)

func appendEpoch(t *testing.T, l *Log, epoch int32, n int) {
	t.Helper()
	for range n {
		b := record.NewBatch(record.BuildOptions{}, record.Record{Value: []byte("x")})
		if _, err := l.AppendAsLeader([]record.Batch{b}, AppendOptions{LeaderEpoch: epoch}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaderEpochCache: epochs are recorded at their first offset, answer
// OffsetForLeaderEpoch as Kafka does, follow truncation and log-start
// moves, and survive a restart (also when the checkpoint is lost).
func TestLeaderEpochCache(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Config{})
	appendEpoch(t, l, 0, 3) // offsets 0-2
	appendEpoch(t, l, 2, 2) // 3-4
	appendEpoch(t, l, 5, 1) // 5
	want := []EpochEntry{{0, 0}, {2, 3}, {5, 5}}
	if got := l.Epochs(); !equalEpochs(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	for _, c := range []struct {
		ask       int32
		epoch     int32
		endOffset int64
	}{{5, 5, 6}, {2, 2, 5}, {3, 2, 5}, {0, 0, 3}, {1, 0, 3}, {6, -1, -1}, {-1, -1, -1}} {
		if e, o := l.EndOffsetForEpoch(c.ask); e != c.epoch || o != c.endOffset {
			t.Errorf("EndOffsetForEpoch(%d) = %d, %d; want %d, %d", c.ask, e, o, c.epoch, c.endOffset)
		}
	}
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if got := l.Epochs(); !equalEpochs(got, want[:2]) {
		t.Fatalf("after truncation %v", got)
	}
	if err := l.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	want = []EpochEntry{{0, 1}, {2, 3}}
	if got := l.Epochs(); !equalEpochs(got, want) {
		t.Fatalf("after moving the start %v, want %v", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Config{})
	if got := l.Epochs(); !equalEpochs(got, want) {
		t.Fatalf("after reopen %v, want %v", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, epochFile)); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Config{})
	if got := l.Epochs(); len(got) != 2 || got[1] != (EpochEntry{2, 3}) {
		t.Fatalf("rebuilt %v", got)
	}
}

func equalEpochs(a, b []EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEpochsPastRecoveryPointSurviveCrash: assign writes the checkpoint
// without fsync, so a crash may leave the last synced content; recovery
// finds the newer epochs again in the batches past the recovery point.
func TestEpochsPastRecoveryPointSurviveCrash(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Config{})
	appendEpoch(t, l, 0, 2) // offsets 0-1
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	synced, err := os.ReadFile(filepath.Join(dir, epochFile))
	if err != nil {
		t.Fatal(err)
	}
	appendEpoch(t, l, 3, 2) // 2-3, past the recovery point
	l.closeUnclean()
	// What a crash may leave: the checkpoint as last fsynced.
	if err := os.WriteFile(filepath.Join(dir, epochFile), synced, 0o644); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, Config{})
	if want := []EpochEntry{{0, 0}, {3, 2}}; !equalEpochs(re.Epochs(), want) {
		t.Fatalf("after crash %v, want %v", re.Epochs(), want)
	}
}

// TestAssignEpochAtLogEnd: a new leader's epoch starts at the log end
// before its first append, which then adds nothing.
func TestAssignEpochAtLogEnd(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	appendEpoch(t, l, 1, 3) // offsets 0-2
	if err := l.AssignEpoch(4); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(2); err != nil { // older: ignored
		t.Fatal(err)
	}
	appendEpoch(t, l, 4, 2)
	if want := []EpochEntry{{1, 0}, {4, 3}}; !equalEpochs(l.Epochs(), want) {
		t.Fatalf("epochs %v, want %v", l.Epochs(), want)
	}
}

// TestEpochThatWroteNothingIsReplaced: an epoch assigned at the log end
// that appended nothing before the next epoch started is dropped, as in
// Kafka's LeaderEpochFileCache.assign, so each epoch ends where the next
// starts.
func TestEpochThatWroteNothingIsReplaced(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	appendEpoch(t, l, 1, 2) // offsets 0-1
	for _, e := range []int32{2, 3} {
		if err := l.AssignEpoch(e); err != nil {
			t.Fatal(err)
		}
	}
	appendEpoch(t, l, 3, 1)
	if want := []EpochEntry{{1, 0}, {3, 2}}; !equalEpochs(l.Epochs(), want) {
		t.Fatalf("epochs %v, want %v", l.Epochs(), want)
	}
	if epoch, end := l.EndOffsetForEpoch(2); epoch != 1 || end != 2 {
		t.Fatalf("EndOffsetForEpoch(2) = epoch %d end %d, want epoch 1 end 2", epoch, end)
	}
}

// TestEpochForOffset: the epoch that wrote an offset is the latest entry
// starting at or before it (Kafka's epochForOffset), past the log end the
// latest; below the history's first entry there is none.
func TestEpochForOffset(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	if _, ok := l.EpochForOffset(0); ok {
		t.Fatal("an empty history has an epoch")
	}
	appendEpoch(t, l, 0, 3) // offsets 0-2
	appendEpoch(t, l, 2, 2) // 3-4
	appendEpoch(t, l, 5, 1) // 5
	if err := l.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		offset int64
		epoch  int32
		ok     bool
	}{{0, -1, false}, {1, 0, true}, {2, 0, true}, {3, 2, true}, {4, 2, true}, {5, 5, true}, {9, 5, true}} {
		if e, ok := l.EpochForOffset(c.offset); e != c.epoch || ok != c.ok {
			t.Errorf("EpochForOffset(%d) = %d, %v; want %d, %v", c.offset, e, ok, c.epoch, c.ok)
		}
	}
}
