// Package coordlog is the log side shared by the coordinators that keep
// their state in a compacted internal topic (broker/group on
// __consumer_offsets, broker/txn on __transaction_state): replaying a led
// partition from its start when the coordinator loads it, and appending a
// state change as Kafka's coordinators do, with acks=all, fenced by the
// leader epoch the coordinator was elected at.
//
// Concurrency: no state of its own; a Partition's methods may run
// concurrently as far as its Log allows (*partition.Partition does).
package coordlog

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// Errors of Append; each coordinator maps them to its own sentinels.
var (
	// ErrNotLeader: the partition is not (or no longer) led here at the
	// coordinator's epoch, or the coordinator resigned it before the
	// append was committed (Kafka's NOT_COORDINATOR).
	ErrNotLeader = errors.New("coordinator partition not led here at this epoch")
	// ErrNotCommitted: the append failed or was not replicated in time
	// (Kafka's COORDINATOR_NOT_AVAILABLE).
	ErrNotCommitted = errors.New("coordinator append not committed")
)

// DefaultTimeout is how long an append waits for the high watermark when
// the coordinator sets no timeout (Kafka's offsets.commit.timeout.ms
// default).
const DefaultTimeout = 5 * time.Second

// Log is what a coordinator needs of an internal partition it leads;
// *partition.Partition implements it. An appended batch counts once the
// high watermark passes it when the log is also replicated; otherwise at
// once.
type Log interface {
	// Append writes the batches; it keeps none of their bytes once it
	// returns (Append builds the batch in a reused buffer).
	Append(batches []record.Batch, now int64) (local.AppendResult, error)
	Read(offset int64, maxBytes int) (segment.Slice, error)
	LogStartOffset() int64
	HighWatermark() int64
}

// replicated is what a replicated partition adds to Log: an append is
// committed once the high watermark passes it, and the wake-ups that
// tell when it moved.
type replicated interface {
	IsLeader() bool
	Wait(ch chan struct{})
	Unwait(ch chan struct{})
}

// leaderLog is a Log that appends only while this broker leads it at a
// given leader epoch.
type leaderLog interface {
	AppendAsLeader(leaderEpoch int32, batches []record.Batch, now int64) (local.AppendResult, error)
}

// isrLog is a partition whose appends need min.insync.replicas in its
// ISR, as acks=all produces do.
type isrLog interface {
	ISR() []int32
	Config() *config.Topic
}

// replicaLog is what a replicated partition offers beyond Log: reads up
// to its log end.
type replicaLog interface {
	ReadReplica(offset int64, maxBytes int) (segment.Slice, error)
	Log() *local.Log
}

var (
	_ Log        = (*partition.Partition)(nil)
	_ replicated = (*partition.Partition)(nil)
	_ leaderLog  = (*partition.Partition)(nil)
	_ isrLog     = (*partition.Partition)(nil)
	_ replicaLog = (*partition.Partition)(nil)
)

// Partition is one led partition of an internal topic, as a coordinator
// shard holds it.
type Partition struct {
	Topic string
	Index int32
	Epoch int32 // the leader epoch the coordinator was elected at
	Log   Log
	// Timeout bounds the wait for an append to be committed
	// (DefaultTimeout when not positive).
	Timeout time.Duration
	// Stop is closed when the coordinator resigns the partition: a
	// waiting append then fails with ErrNotLeader.
	Stop <-chan struct{}

	txnMu sync.Mutex // serialises AppendTxn
}

// Append writes recs as one batch and returns once the batch is
// committed, as Kafka's coordinators append with acks=all: the high
// watermark passed it (at once on a single broker), with the topic's
// min.insync.replicas in the ISR before and after (ErrNotCommitted
// otherwise, which Kafka's coordinators answer as
// COORDINATOR_NOT_AVAILABLE). The append carries
// the partition's Epoch, so a coordinator whose partition changed leader
// or epoch since it was elected writes nothing (ErrNotLeader); a batch
// not written or not committed within Timeout is ErrNotCommitted.
func (p *Partition) Append(recs []record.Record, now time.Time) error {
	return p.append(recs, now, record.BuildOptions{})
}

// append builds recs into one batch with the header opts and appends it.
func (p *Partition) append(recs []record.Record, now time.Time, opts record.BuildOptions) error {
	ms := now.UnixMilli()
	buf := batchBufs.Get().(*[]byte)
	defer putBatchBuf(buf)
	opts.FirstTimestamp, opts.Buf = ms, *buf
	b, err := record.Build(opts, recs)
	if err != nil {
		return fmt.Errorf("build %s-%d batch: %w", p.Topic, p.Index, err)
	}
	*buf = b // the log copies the batch, so the buffer is reused
	if err := p.checkISR("before"); err != nil {
		return err
	}
	var res local.AppendResult
	if ll, ok := p.Log.(leaderLog); ok {
		res, err = ll.AppendAsLeader(p.Epoch, []record.Batch{b}, ms)
	} else {
		res, err = p.Log.Append([]record.Batch{b}, ms)
	}
	switch {
	case errors.Is(err, partition.ErrNotLeaderOrFollower):
		return fmt.Errorf("append to %s-%d at leader epoch %d: %w: %w", p.Topic, p.Index, p.Epoch, ErrNotLeader, err)
	case err != nil:
		return fmt.Errorf("append to %s-%d: %w: %w", p.Topic, p.Index, ErrNotCommitted, err)
	}
	if err := p.awaitCommitted(res.LastOffset + 1); err != nil {
		return err
	}
	return p.checkISR("after")
}

// checkISR fails with ErrNotCommitted when the partition's ISR is smaller
// than its min.insync.replicas (Kafka's NOT_ENOUGH_REPLICAS, or
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when "after" the append).
func (p *Partition) checkISR(when string) error {
	il, ok := p.Log.(isrLog)
	if !ok {
		return nil
	}
	isr, need := len(il.ISR()), il.Config().MinInsyncReplicas
	if int32(isr) >= need {
		return nil
	}
	return fmt.Errorf("append to %s-%d: %d in-sync replicas %s the append, min.insync.replicas %d: %w", p.Topic, p.Index, isr, when, need, ErrNotCommitted)
}

// maxPooledBuf bounds the batch buffers the pool keeps.
const maxPooledBuf = 64 << 10

// batchBufs pools the buffers appends build their batch in (the log
// writes the batch and keeps none of it).
var batchBufs = sync.Pool{New: func() any { return new([]byte) }}

func putBatchBuf(b *[]byte) {
	if cap(*b) > maxPooledBuf {
		return
	}
	*b = (*b)[:0]
	batchBufs.Put(b)
}

// awaitCommitted waits until the high watermark reaches until, the
// partition stops being led here, the coordinator resigns it or the
// timeout passes.
func (p *Partition) awaitCommitted(until int64) error {
	r, ok := p.Log.(replicated)
	if !ok || p.Log.HighWatermark() >= until {
		return nil
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	wake := make(chan struct{}, 1)
	defer r.Unwait(wake)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.Wait(wake)
		switch {
		case p.Log.HighWatermark() >= until:
			return nil
		case !r.IsLeader():
			return fmt.Errorf("%s-%d lost its leadership before offset %d was committed: %w", p.Topic, p.Index, until-1, ErrNotLeader)
		}
		select {
		case <-wake:
		case <-p.Stop:
			return fmt.Errorf("%s-%d resigned before offset %d was committed: %w", p.Topic, p.Index, until-1, ErrNotLeader)
		case <-deadline.C:
			return fmt.Errorf("%s-%d: offset %d not replicated within %v: %w", p.Topic, p.Index, until-1, timeout, ErrNotCommitted)
		}
	}
}

// loadChunk is how many bytes of the partition one replay read returns
// at most (a larger batch still comes whole).
const loadChunk = 1 << 20

// Replay calls fn with the key and value of every record of the log,
// from its start to its end (ReplayBatches). Control batches are skipped.
// The key and value alias a read buffer: fn copies what it keeps.
func Replay(topic string, l Log, fn func(key, value []byte)) error {
	return ReplayBatches(topic, l, func(b record.Batch, recs []record.Record) {
		for _, r := range recs {
			fn(r.Key, r.Value)
		}
	})
}

// ReplayBatches calls fn with every batch of the log and its records at or
// after the log start, from its start to its end, as Kafka's coordinators
// load: a new leader's high watermark may still lag records the previous
// leader had committed, so a replicated partition is read to its log end.
// Control batches come with no records (fn reads their marker). The batch
// and records alias a read buffer: fn copies what it keeps.
func ReplayBatches(topic string, l Log, fn func(b record.Batch, recs []record.Record)) error {
	end := l.HighWatermark()
	read := l.Read
	if r, ok := l.(replicaLog); ok {
		end, read = r.Log().LogEndOffset(), r.ReadReplica
	}
	for off := l.LogStartOffset(); off < end; {
		buf, err := readChunk(topic, read, off)
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			// No batch is left in [off, end): the cleaner removed the tail's
			// records (expired tombstones). Kafka's loader stops there too.
			break
		}
		batches, err := record.Split(buf)
		if err != nil {
			return fmt.Errorf("read %s at %d: %w", topic, off, err)
		}
		if len(batches) == 0 {
			return fmt.Errorf("read %s at %d: no batch below the high watermark %d", topic, off, end)
		}
		for _, b := range batches {
			if b.LastOffset() < off {
				continue
			}
			var recs []record.Record
			if !b.IsControl() {
				all, err := b.Records()
				if err != nil {
					return fmt.Errorf("records of %s batch at %d: %w", topic, b.BaseOffset(), err)
				}
				recs = all
				for len(recs) > 0 && b.BaseOffset()+int64(recs[0].OffsetDelta) < off {
					recs = recs[1:]
				}
			}
			fn(b, recs)
			off = b.LastOffset() + 1
		}
	}
	return nil
}

// readChunk reads the whole batches from off on; nothing when no batch is
// left below the read's bound.
func readChunk(topic string, read func(int64, int) (segment.Slice, error), off int64) ([]byte, error) {
	s, err := read(off, loadChunk)
	if err != nil {
		return nil, fmt.Errorf("read %s at %d: %w", topic, off, err)
	}
	defer s.Release()
	if s.Len == 0 || s.File == nil {
		return nil, nil
	}
	buf := make([]byte, s.Len)
	n, err := s.File.ReadAt(buf, s.Pos)
	if err != nil && !(errors.Is(err, io.EOF) && n > 0) {
		return nil, fmt.Errorf("read %s at %d: %w", topic, off, err)
	}
	return buf[:n], nil
}
