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

// Append validates nothing (the caller has validated the batches), appends
// them as leader and wakes waiting fetches.
func (p *Partition) Append(batches []record.Batch, now int64) (local.AppendResult, error) {
	cfg := p.cfg.Load()
	res, err := p.log.AppendAsLeader(batches, local.AppendOptions{
		LeaderEpoch:   p.leaderEpoch.Load(),
		LogAppendTime: cfg.LogAppendTime,
		Now:           now,
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

// Read returns whole batches from offset on, up to the high watermark, for
// consumers. Reading exactly at the high watermark returns an empty slice.
// On a follower (a consumer fetching from the closest replica, KIP-392)
// the high watermark is the one the leader last sent, which may trail the
// leader's: an offset between it and the log end reads nothing yet, as in
// Kafka, rather than being out of range.
func (p *Partition) Read(offset int64, maxBytes int) (segment.Slice, error) {
	return p.read(offset, maxBytes, false)
}

// ReadReplica returns whole batches from offset on, up to the log end, for
// a follower's fetch.
func (p *Partition) ReadReplica(offset int64, maxBytes int) (segment.Slice, error) {
	return p.read(offset, maxBytes, true)
}

func (p *Partition) read(offset int64, maxBytes int, replica bool) (segment.Slice, error) {
	upTo := p.HighWatermark()
	if replica {
		upTo = p.log.LogEndOffset()
	}
	if offset < p.log.LogStartOffset() || offset > upTo && (replica || p.IsLeader() || offset > p.log.LogEndOffset()) {
		return segment.Slice{}, ErrOffsetOutOfRange
	}
	if offset >= upTo {
		return segment.Slice{}, nil
	}
	s, err := p.log.Read(offset, maxBytes, upTo)
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
// configuration t on a broker with configuration b.
func logConfig(b *config.Broker, t *config.Topic) local.Config {
	return local.Config{
		PageCacheWindow:         b.LogPageCacheWindowBytes,
		FollowerPageCacheWindow: b.ReplicaPageCacheWindowBytes,
		SegmentBytes:            t.SegmentBytes,
		SegmentMs:               t.SegmentMs,
		IndexIntervalBytes:      int(t.IndexIntervalBytes),
		FlushIntervalMessages:   t.FlushMessages,
		FlushIntervalMs:         t.FlushMs,
	}
}
