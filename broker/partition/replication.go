package partition

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// hwFile checkpoints a partition's high watermark.
const hwFile = "high-watermark"

// follower is what the leader knows of one follower replica.
type follower struct {
	leo        int64     // the follower's log end, from its fetch offset; -1 unknown
	logStart   int64     // the follower's log start, as its last fetch said; -1 unknown
	caughtUpAt time.Time // when it last had everything the leader had
	// The leader's log end and the time at the follower's previous fetch:
	// reaching that log end means it was caught up back then (Kafka's
	// lastFetchLeaderLogEndOffset rule).
	prevLeaderLEO int64
	prevFetchAt   time.Time
	sentHW        int64 // the high watermark last sent to it; -1 none
}

// applyState takes the partition's metadata: leader, epoch, replicas and
// ISR. Becoming leader starts a fresh follower table. A change of leader
// or leader epoch holds roleMu exclusively (Kafka's makeLeader and
// makeFollower take leaderIsrUpdateLock's write lock), so it waits for the
// writes decided under the old role and none decided under it follows.
func (p *Partition) applyState(st metadata.PartitionState, now time.Time) {
	// Only Sync (under Manager.mu) stores leader and epoch: reading them
	// here without roleMu is exact.
	if st.Leader != p.leader.Load() || st.LeaderEpoch != p.leaderEpoch.Load() {
		p.roleMu.Lock()
		defer p.roleMu.Unlock()
	}
	p.mu.Lock()
	prev := p.state
	p.state = st.Clone()
	p.leaderEpoch.Store(st.LeaderEpoch)
	p.leader.Store(st.Leader)
	if st.PartitionEpoch != prev.PartitionEpoch {
		p.isrChange = false
	}
	leading := st.Leader == p.nodeID
	if !leading {
		p.followers = nil
		p.mu.Unlock()
		p.wake()
		return
	}
	newEpoch := prev.Leader != p.nodeID || prev.LeaderEpoch != st.LeaderEpoch
	if newEpoch || p.followers == nil {
		p.followers = map[int32]*follower{}
	}
	for _, r := range st.Replicas {
		if _, ok := p.followers[r]; !ok && r != p.nodeID {
			f := &follower{leo: -1, logStart: -1, sentHW: -1}
			if slices.Contains(st.ISR, r) {
				f.caughtUpAt = now
			}
			p.followers[r] = f
		}
	}
	for r := range p.followers {
		if !slices.Contains(st.Replicas, r) {
			delete(p.followers, r)
		}
	}
	p.mu.Unlock()
	if newEpoch {
		// The new epoch starts at our log end (Kafka's makeLeader), before
		// any append of the epoch. A failed checkpoint write leaves the
		// entry dirty for the next flush.
		_ = p.log.AssignEpoch(st.LeaderEpoch)
	}
	p.advanceHighWatermark()
	p.wake()
}

// ISR is the in-sync replica set as metadata last said.
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.state.ISR)
}

// Replicas is the replica set as metadata last said.
func (p *Partition) Replicas() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.state.Replicas)
}

// advanceHighWatermark moves the leader's high watermark up to the
// smallest log end among the in-sync replicas. It never moves it down.
func (p *Partition) advanceHighWatermark() {
	if !p.IsLeader() {
		return
	}
	p.mu.Lock()
	hw := p.log.LogEndOffset()
	for _, r := range p.state.ISR {
		if r == p.nodeID {
			continue
		}
		f := p.followers[r]
		if f == nil || f.leo < 0 {
			hw = min(hw, p.hw.Load())
			continue
		}
		hw = min(hw, f.leo)
	}
	p.mu.Unlock()
	for {
		cur := p.hw.Load()
		if hw <= cur {
			return
		}
		if p.hw.CompareAndSwap(cur, hw) {
			p.log.OnHighWatermarkUpdated(hw)
			p.wake()
			return
		}
	}
}

// UpdateFollower records a follower's fetch at fetchOffset (its log end)
// with logStart (its log start offset, -1 when the fetch does not say),
// advances the high watermark, and returns the ISR the leader now wants
// (nil: no change) when the follower has caught up and is not in it. A
// follower's log start that moved up wakes the waiters: a DeleteRecords
// may wait on the low watermark (LowWatermark).
func (p *Partition) UpdateFollower(replica int32, fetchOffset, logStart int64, now time.Time) []int32 {
	leo := p.log.LogEndOffset()
	p.mu.Lock()
	f := p.followers[replica]
	if f == nil {
		p.mu.Unlock()
		return nil
	}
	startMoved := logStart > f.logStart
	f.logStart = logStart
	switch {
	case fetchOffset >= leo:
		f.caughtUpAt = now
	case fetchOffset >= f.prevLeaderLEO && !f.prevFetchAt.IsZero():
		f.caughtUpAt = f.prevFetchAt
	}
	f.leo, f.prevLeaderLEO, f.prevFetchAt = fetchOffset, leo, now
	var expand []int32
	if !p.isrChange && !slices.Contains(p.state.ISR, replica) && fetchOffset >= p.hw.Load() && fetchOffset >= p.epochStart() {
		expand = append(slices.Clone(p.state.ISR), replica)
		slices.Sort(expand)
		p.isrChange = true
	}
	p.mu.Unlock()
	p.advanceHighWatermark()
	if startMoved {
		p.wake()
	}
	return expand
}

// LowWatermark is the smallest log start offset among the leader and its
// followers that are alive (alive reports a live broker), as Kafka's
// Partition.lowWatermarkIfLeader: a follower that has not reported its
// log start since this broker became leader counts as -1. Records below
// it are gone from every live replica. ok is false when this broker does
// not lead the partition.
//
// alive is called without Partition.mu held.
func (p *Partition) LowWatermark(alive func(id int32) bool) (low int64, ok bool) {
	if !p.IsLeader() {
		return -1, false
	}
	low = p.LogStartOffset()
	p.mu.Lock()
	starts := make(map[int32]int64, len(p.followers))
	for id, f := range p.followers {
		starts[id] = f.logStart
	}
	p.mu.Unlock()
	for id, s := range starts {
		if s < low && alive(id) {
			low = s
		}
	}
	return low, true
}

// HighWatermarkNews records that a fetch answer to follower replica
// carries hw and reports whether that is news to it: the high watermark
// moved since the last answer. Such a fetch answers at once instead of
// long-polling (Kafka's followerNeedsHwUpdate), since a follower learns the
// high watermark only from fetch answers and consumers reading from it
// (KIP-392) wait on it. Call it only for an answer that will be sent: one
// that reports news is.
func (p *Partition) HighWatermarkNews(replica int32, hw int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.followers[replica]
	if f == nil || hw <= f.sentHW {
		return false
	}
	f.sentHW = hw
	return true
}

// epochStart is the first offset of the current leader epoch in the log
// (a follower joins the ISR only once it holds this epoch's data).
func (p *Partition) epochStart() int64 {
	es := p.log.Epochs()
	if n := len(es); n > 0 && es[n-1].Epoch == p.leaderEpoch.Load() {
		return es[n-1].StartOffset
	}
	return p.log.LogEndOffset()
}

// laggingISR returns the ISR without the followers that have not caught up
// within lag (nil: no change). The leader always stays.
func (p *Partition) laggingISR(now time.Time, lag time.Duration) []int32 {
	if !p.IsLeader() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isrChange {
		return nil
	}
	next := make([]int32, 0, len(p.state.ISR))
	for _, r := range p.state.ISR {
		f := p.followers[r]
		if r == p.nodeID || (f != nil && now.Sub(f.caughtUpAt) <= lag) {
			next = append(next, r)
		}
	}
	if len(next) == len(p.state.ISR) {
		return nil
	}
	p.isrChange = true
	return next
}

// isrWritten ends an ISR change that failed to be written.
func (p *Partition) isrWritten() {
	p.mu.Lock()
	p.isrChange = false
	p.mu.Unlock()
}

// stateCopy returns the partition's metadata as last applied.
func (p *Partition) stateCopy() metadata.PartitionState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.Clone()
}

// SetFollowerHighWatermark takes the high watermark the leader at
// leaderEpoch sent, capped at the local log end. Like the follower's
// appends it is refused (ErrNotLeaderOrFollower) once the partition moved
// on: an old leader's high watermark must not overwrite the one this
// broker keeps after becoming leader.
func (p *Partition) SetFollowerHighWatermark(leaderEpoch int32, hw int64) error {
	return p.asFollower(leaderEpoch, func() error {
		hw = min(hw, p.log.LogEndOffset())
		if p.hw.Swap(hw) != hw {
			p.log.OnHighWatermarkUpdated(hw)
			p.wake()
		}
		return nil
	})
}

// SetFollowerLogStart moves the log start offset up to the one the leader
// at leaderEpoch sent (as Kafka's follower does on every fetch answer), so
// that records deleted on the leader (DeleteRecords, retention) go here
// too, and the follower's next fetch reports it. It never moves past the
// high watermark, and is refused like the follower's other writes once the
// partition moved on.
func (p *Partition) SetFollowerLogStart(leaderEpoch int32, logStart int64) error {
	if logStart <= p.log.LogStartOffset() {
		return nil // the common case: nothing was deleted
	}
	err := p.asFollower(leaderEpoch, func() error {
		return p.log.DeleteRecordsBefore(min(logStart, p.hw.Load()))
	})
	if err != nil {
		return fmt.Errorf("move the log start of %s-%d to %d: %w", p.Topic, p.Index, logStart, err)
	}
	return nil
}

// AppendFollower appends batches fetched from the leader at leaderEpoch
// (the epoch the fetch was made under) and wakes waiters. When the
// partition has moved on (a newer epoch, or this broker now leads it) the
// batches are dropped with ErrNotLeaderOrFollower, as Kafka's fetcher drops
// an answer whose epoch is no longer the partition's.
func (p *Partition) AppendFollower(leaderEpoch int32, data []byte) error {
	batches, err := splitFetched(data)
	if err != nil || len(batches) == 0 {
		return err
	}
	err = p.asFollower(leaderEpoch, func() error { return p.log.AppendAsFollower(batches) })
	if err != nil {
		return fmt.Errorf("append to %s-%d as follower: %w", p.Topic, p.Index, err)
	}
	p.wake()
	return nil
}

// TruncateTo cuts the log (a follower's divergent tail, found under
// leaderEpoch) and caps the high watermark; ErrNotLeaderOrFollower when the
// partition moved on meanwhile, so a new leader never loses its tail.
func (p *Partition) TruncateTo(leaderEpoch int32, offset int64) error {
	err := p.asFollower(leaderEpoch, func() error { return p.log.TruncateTo(offset) })
	if err != nil {
		return fmt.Errorf("truncate %s-%d to %d: %w", p.Topic, p.Index, offset, err)
	}
	leo := p.log.LogEndOffset()
	for {
		cur := p.hw.Load()
		if cur <= leo || p.hw.CompareAndSwap(cur, leo) {
			return nil
		}
	}
}

// TruncateFullyAndStartAt empties the log and restarts it at offset (a
// follower at leaderEpoch behind the leader's log start).
func (p *Partition) TruncateFullyAndStartAt(leaderEpoch int32, offset int64) error {
	err := p.asFollower(leaderEpoch, func() error {
		if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
			return err
		}
		p.hw.Store(offset)
		return nil
	})
	if err != nil {
		return fmt.Errorf("restart %s-%d at %d: %w", p.Topic, p.Index, offset, err)
	}
	return nil
}

// checkpointHW writes the high watermark next to the log when it moved
// since the last checkpoint (each write is an fsync).
func (p *Partition) checkpointHW() error {
	hw := p.hw.Load()
	if hw == p.hwSaved.Load() {
		return nil
	}
	if err := segment.WriteFileAtomic(filepath.Join(p.log.Dir(), hwFile), []byte(strconv.FormatInt(hw, 10)+"\n")); err != nil {
		return err
	}
	p.hwSaved.Store(hw)
	return nil
}

// loadHW sets the high watermark from its checkpoint, capped at the log
// end; a single-replica partition's is its log end.
func (p *Partition) loadHW(replicas int) {
	leo := p.log.LogEndOffset()
	if replicas <= 1 {
		p.hw.Store(leo)
		return
	}
	b, err := os.ReadFile(filepath.Join(p.log.Dir(), hwFile))
	hw, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || perr != nil {
		hw = p.log.LogStartOffset()
	}
	p.hw.Store(min(max(hw, p.log.LogStartOffset()), leo))
}

// splitFetched splits fetched record bytes into whole batches; a torn or
// corrupt tail is left for the next fetch to bring again. When every batch
// is whole (a Strata leader sends whole batches), CRCs are left to the
// log's append, which checks each batch anyway: one pass, not two.
func splitFetched(data []byte) ([]record.Batch, error) {
	if batches, err := record.Split(data); err == nil {
		return batches, nil
	}
	n, _ := record.ValidPrefix(data)
	if n == 0 && len(data) > 0 {
		if _, err := record.Split(data); err != nil {
			return nil, nil // a partial first batch: fetch again with more room
		}
		return nil, fmt.Errorf("fetched batch fails its CRC: %w", record.ErrCorrupt)
	}
	return record.Split(data[:n])
}
