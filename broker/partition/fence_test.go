package partition

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

func oneBatch() []record.Batch {
	return []record.Batch{record.NewBatch(record.BuildOptions{}, record.Record{Value: []byte("v")})}
}

// leaderState is broker 1 leading with broker 2 in sync, at epoch.
func leaderState(epoch int32) metadata.PartitionState {
	return metadata.PartitionState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}, LeaderEpoch: epoch}
}

// followerState is broker 2 leading, broker 1 following, at epoch.
func followerState(epoch int32) metadata.PartitionState {
	return metadata.PartitionState{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{1, 2}, LeaderEpoch: epoch}
}

// TestWritesFencedByRole: a write decided under a role and leader epoch is
// refused with ErrNotLeaderOrFollower, writing nothing, once the partition
// holds another: appends and DeleteRecords as leader, appends and
// truncations as follower.
func TestWritesFencedByRole(t *testing.T) {
	p := onePartition(t, leaderState(1))
	if _, err := p.AppendAsLeader(1, oneBatch(), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(0, oneBatch(), 1); !errors.Is(err, ErrNotLeaderOrFollower) {
		t.Fatalf("append at an older epoch: %v", err)
	}

	p.applyState(followerState(2), time.Now())
	for name, err := range map[string]error{
		"append at the old epoch": func() error { _, err := p.AppendAsLeader(1, oneBatch(), 1); return err }(),
		"append at any epoch":     func() error { _, err := p.Append(oneBatch(), 1); return err }(),
		"append at the new epoch": func() error { _, err := p.AppendAsLeader(2, oneBatch(), 1); return err }(),
		"delete records":          func() error { _, err := p.DeleteRecords(1, 1); return err }(),
	} {
		if !errors.Is(err, ErrNotLeaderOrFollower) {
			t.Errorf("%s on a follower: %v", name, err)
		}
	}
	if leo := p.Log().LogEndOffset(); leo != 1 {
		t.Fatalf("log end %d after refused appends, want 1", leo)
	}

	// Leader again at epoch 3: the epoch-1 decision stays refused, as do a
	// fetcher's writes decided as follower at epoch 2.
	p.applyState(leaderState(3), time.Now())
	if _, err := p.AppendAsLeader(1, oneBatch(), 1); !errors.Is(err, ErrNotLeaderOrFollower) {
		t.Fatalf("append at epoch 1 on the epoch-3 leader: %v", err)
	}
	follow := record.NewBatch(record.BuildOptions{BaseOffset: 1, PartitionLeaderEpoch: 2}, record.Record{Value: []byte("f")})
	if err := p.AppendFollower(2, follow); !errors.Is(err, ErrNotLeaderOrFollower) {
		t.Fatalf("follower append on the leader: %v", err)
	}
	if err := p.TruncateTo(2, 0); !errors.Is(err, ErrNotLeaderOrFollower) {
		t.Fatalf("follower truncation on the leader: %v", err)
	}
	if err := p.TruncateFullyAndStartAt(2, 5); !errors.Is(err, ErrNotLeaderOrFollower) {
		t.Fatalf("follower restart on the leader: %v", err)
	}
	hw := p.HighWatermark()
	if err := p.SetFollowerHighWatermark(2, 0); !errors.Is(err, ErrNotLeaderOrFollower) || p.HighWatermark() != hw {
		t.Fatalf("old leader's high watermark on the leader: %v, high watermark %d, want %d", err, p.HighWatermark(), hw)
	}
	res, err := p.AppendAsLeader(3, oneBatch(), 1)
	if err != nil || res.FirstOffset != 1 {
		t.Fatalf("append at epoch 3: %+v, %v", res, err)
	}
	es := p.Log().Epochs()
	if len(es) != 2 || es[0].Epoch != 1 || es[1].Epoch != 3 || es[1].StartOffset != 1 {
		t.Fatalf("epochs %+v, want 1@0 3@1", es)
	}
	if _, err := p.DeleteRecords(3, 1); !errors.Is(err, ErrOffsetOutOfRange) || p.LogStartOffset() != 0 {
		t.Fatalf("delete records past the high watermark: start %d, %v", p.LogStartOffset(), err)
	}
}

// TestAppendsRaceLeadershipChanges: appenders each carry the epoch they
// saw while the partition flips between leader (odd epochs) and follower
// (even epochs). Run with -race. Every batch in the log must carry an
// epoch this broker led, and the epoch its position in the leader-epoch
// history says: no batch is appended under an epoch that no longer held.
func TestAppendsRaceLeadershipChanges(t *testing.T) {
	p := onePartition(t, leaderState(1))
	var stop atomic.Bool
	var appended, refused atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				epoch := p.LeaderEpoch()
				if !p.IsLeader() {
					runtime.Gosched()
					continue
				}
				_, err := p.AppendAsLeader(epoch, oneBatch(), 1)
				switch {
				case err == nil:
					appended.Add(1)
				case errors.Is(err, ErrNotLeaderOrFollower):
					refused.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for epoch := int32(2); epoch <= 200 && time.Now().Before(deadline); epoch++ {
		// Let some appends land at the current epoch first.
		for n := appended.Load(); appended.Load() == n && p.IsLeader() && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		st := followerState(epoch)
		if epoch%2 == 1 {
			st = leaderState(epoch)
		}
		p.applyState(st, time.Now())
	}
	stop.Store(true)
	wg.Wait()
	if appended.Load() == 0 {
		t.Fatal("nothing appended")
	}
	es := p.Log().Epochs()
	for off := int64(0); off < p.Log().LogEndOffset(); off++ {
		s, err := p.Log().Read(off, 1, p.Log().LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, s.Len)
		if _, err := s.File.ReadAt(buf, s.Pos); err != nil {
			t.Fatal(err)
		}
		s.Release()
		b := record.Batch(buf)
		want := int32(-1)
		for _, e := range es {
			if e.StartOffset <= b.BaseOffset() {
				want = e.Epoch
			}
		}
		if got := b.PartitionLeaderEpoch(); got%2 == 0 || got != want {
			t.Fatalf("batch at %d has epoch %d; the leader-epoch history says %d", b.BaseOffset(), got, want)
		}
	}
	t.Logf("%d appended, %d refused across leadership changes", appended.Load(), refused.Load())
}
