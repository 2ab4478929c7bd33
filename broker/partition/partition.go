package partition

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/remote"
	"github.com/strata-broker/strata/tier/segment"
)

// ErrOffsetOutOfRange means a read asked for an offset outside
// [log start offset, high watermark].
var ErrOffsetOutOfRange = errors.New("partition: offset out of range")

// ErrNotLeaderOrFollower means a write was refused because the partition
// no longer has the role and leader epoch the caller decided under (Kafka's
// NotLeaderOrFollowerException): a leader's append or DeleteRecords after
// the partition moved on, or a follower's write after it became leader or
// took a newer leader epoch. Nothing was written.
var ErrNotLeaderOrFollower = errors.New("partition: not the leader or follower at this leader epoch")

// Partition is one topic partition served by this broker, as leader or as
// follower.
type Partition struct {
	Topic   string
	Index   int32
	TopicID metadata.TopicID

	nodeID      int32
	log         *local.Log
	cfg         atomic.Pointer[config.Topic]
	leaderEpoch atomic.Int32
	leader      atomic.Int32
	hw          atomic.Int64
	hwSaved     atomic.Int64   // the high watermark last checkpointed (-1: none)
	tier        *remote.Reader // cold reads; nil without tiering (set at open)

	// roleMu is Kafka's leaderIsrUpdateLock: applyState holds it
	// exclusively while it changes the role and leader epoch; every write
	// to the log that depends on the role (appends as leader or follower,
	// DeleteRecords, truncations) holds it shared while it checks the role
	// it was decided under and writes. Reads do not take it.
	roleMu sync.RWMutex

	// txnMu serialises appends under a VerificationGuard with the
	// transaction markers, and guards verifying (txnverify.go). Lock
	// order: txnMu, then roleMu.
	txnMu     sync.Mutex
	verifying map[int64]*VerificationGuard // by producer id

	mu      sync.Mutex
	waiters []chan struct{}
	// Replication state, guarded by mu.
	state     metadata.PartitionState // as last applied from metadata
	followers map[int32]*follower     // leader only: what each follower has
	isrChange bool                    // an ISR change is being written
}

// Config is the partition's effective topic configuration.
func (p *Partition) Config() *config.Topic { return p.cfg.Load() }

// LeaderEpoch is the epoch of the current leader.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// Leader is the current leader's broker id (-1: none).
func (p *Partition) Leader() int32 { return p.leader.Load() }

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool { return p.leader.Load() == p.nodeID }

// Log is the partition's log.
func (p *Partition) Log() *local.Log { return p.log }

// HighWatermark is the offset below which records are committed (on every
// in-sync replica) and visible to consumers.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// LogStartOffset is the first offset still in the log, local or tiered.
func (p *Partition) LogStartOffset() int64 {
	if s, ok := p.tieredStart(); ok {
		return s
	}
	return p.log.LogStartOffset()
}

// Append appends batches as leader at whatever leader epoch the partition
// holds, as Kafka's Partition.appendRecordsToLeader does; see
// AppendAsLeader.
func (p *Partition) Append(batches []record.Batch, now int64) (local.AppendResult, error) {
	return p.AppendAsLeader(-1, batches, now)
}

// AppendAsLeader validates nothing (the caller has validated the batches),
// appends them as leader at leaderEpoch, the epoch the caller decided
// under (-1: whichever the partition holds), and wakes waiting fetches. The
// role check and the append are one critical section that applyState
// cannot enter: when this broker no longer leads at that epoch the append
// fails with ErrNotLeaderOrFollower and nothing is written, so no batch is
// ever stamped with an epoch the partition does not lead.
func (p *Partition) AppendAsLeader(leaderEpoch int32, batches []record.Batch, now int64) (local.AppendResult, error) {
	cfg := p.cfg.Load()
	var res local.AppendResult
	err := p.asLeader(leaderEpoch, func(epoch int32) error {
		var err error
		res, err = p.log.AppendAsLeader(batches, local.AppendOptions{
			LeaderEpoch:   epoch,
			LogAppendTime: cfg.LogAppendTime,
			Now:           now,
		})
		return err
	})
	if err != nil {
		return res, fmt.Errorf("append to %s-%d: %w", p.Topic, p.Index, err)
	}
	if !res.Duplicate {
		p.advanceHighWatermark()
		p.wake()
	}
	return res, nil
}

// asLeader runs write holding roleMu shared, if this broker leads the
// partition at leaderEpoch (-1: at any epoch); write gets the epoch.
func (p *Partition) asLeader(leaderEpoch int32, write func(epoch int32) error) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	epoch := p.leaderEpoch.Load()
	if p.leader.Load() != p.nodeID || leaderEpoch >= 0 && leaderEpoch != epoch {
		return fmt.Errorf("leader epoch %d asked, partition has leader %d at epoch %d: %w", leaderEpoch, p.leader.Load(), epoch, ErrNotLeaderOrFollower)
	}
	return write(epoch)
}

// asFollower runs write holding roleMu shared, if this broker follows the
// partition at leaderEpoch: a fetcher's write decided under an older epoch,
// or racing this broker's election as leader, is refused.
func (p *Partition) asFollower(leaderEpoch int32, write func() error) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if epoch := p.leaderEpoch.Load(); p.leader.Load() == p.nodeID || leaderEpoch != epoch {
		return fmt.Errorf("follower write at leader epoch %d, partition has leader %d at epoch %d: %w", leaderEpoch, p.leader.Load(), epoch, ErrNotLeaderOrFollower)
	}
	return write()
}

// DeleteRecords moves the log start offset up to offset (-1: the high
// watermark) as leader at leaderEpoch, as Kafka's deleteRecordsOnLeader,
// and returns offset as resolved (the high watermark for -1): what every
// replica's log start must reach before the deletion is complete (see
// LowWatermark). An offset past the high watermark is
// ErrOffsetOutOfRange; one at or below the log start changes nothing;
// ErrNotLeaderOrFollower when the partition moved on.
func (p *Partition) DeleteRecords(leaderEpoch int32, offset int64) (int64, error) {
	err := p.asLeader(leaderEpoch, func(int32) error {
		hw := p.hw.Load()
		if offset == -1 {
			offset = hw
		}
		switch {
		case offset < 0 || offset > hw:
			return fmt.Errorf("delete records before %d, high watermark %d: %w", offset, hw, ErrOffsetOutOfRange)
		case offset > p.LogStartOffset():
			return p.log.DeleteRecordsBefore(offset)
		}
		return nil
	})
	if err != nil {
		return offset, fmt.Errorf("delete records of %s-%d: %w", p.Topic, p.Index, err)
	}
	return offset, nil
}

// Read returns whole batches from offset on, up to the high watermark, for
// consumers. Reading exactly at the high watermark returns an empty slice.
// On a follower (a consumer fetching from the closest replica, KIP-392)
// the high watermark is the one the leader last sent, which may trail the
// leader's: an offset between it and the log end reads nothing yet, as in
// Kafka, rather than being out of range.
func (p *Partition) Read(offset int64, maxBytes int) (segment.Slice, error) {
	return p.read(offset, maxBytes, false, false)
}

// ReadReplica returns whole batches from offset on, up to the log end, for
// a follower's fetch.
func (p *Partition) ReadReplica(offset int64, maxBytes int) (segment.Slice, error) {
	return p.read(offset, maxBytes, true, false)
}

// read reads up to the log end for a replica, else up to the high
// watermark, or the last stable offset below it when committed.
func (p *Partition) read(offset int64, maxBytes int, replica, committed bool) (segment.Slice, error) {
	upTo := p.HighWatermark()
	if replica {
		upTo = p.log.LogEndOffset()
	}
	if offset < p.log.LogStartOffset() || offset > upTo && (replica || p.IsLeader() || offset > p.log.LogEndOffset()) {
		return segment.Slice{}, ErrOffsetOutOfRange
	}
	stop := upTo
	if committed {
		stop = p.log.LastStableOffset(upTo)
	}
	if offset >= stop {
		return segment.Slice{}, nil
	}
	s, err := p.log.Read(offset, maxBytes, stop)
	if errors.Is(err, local.ErrOffsetOutOfRange) {
		return segment.Slice{}, ErrOffsetOutOfRange
	}
	return s, err
}

// Wait registers ch to be signalled (non-blocking send) on the next append.
// The caller must call Unwait when it stops waiting.
func (p *Partition) Wait(ch chan struct{}) {
	p.mu.Lock()
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()
}

// Unwait removes every registration of ch.
func (p *Partition) Unwait(ch chan struct{}) {
	p.mu.Lock()
	p.waiters = slices.DeleteFunc(p.waiters, func(w chan struct{}) bool { return w == ch })
	p.mu.Unlock()
}

func (p *Partition) wake() {
	p.mu.Lock()
	ws := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	for _, w := range ws {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// logConfig is the log configuration of a partition of a topic with
// configuration t on a broker with configuration b, whose appends ask
// space first (nil: nothing).
func logConfig(b *config.Broker, t *config.Topic, space func(n int64) error) local.Config {
	return local.Config{
		SpaceCheck:              space,
		PageCacheWindow:         b.LogPageCacheWindowBytes,
		FollowerPageCacheWindow: b.ReplicaPageCacheWindowBytes,
		SegmentBytes:            t.SegmentBytes,
		SegmentMs:               t.SegmentMs,
		IndexIntervalBytes:      int(t.IndexIntervalBytes),
		FlushIntervalMessages:   t.FlushMessages,
		FlushIntervalMs:         t.FlushMs,
		ProducerIDExpirationMs:  b.ProducerIDExpirationMs,
	}
}
