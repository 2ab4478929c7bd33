package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/fetchsession"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/peer"
)

// retryBackoff is how long a partition whose fetch failed waits before it
// is fetched again; the others go on.
//
// Fetch sizes are replica.fetch.max.bytes and
// replica.fetch.response.max.bytes, 1 and 10 MiB by default, as in Kafka.
// Smaller rounds replicate faster per byte: a round's records go from the
// socket through the CRC check into the log while still in the CPU cache
// (doc/perf.md), and the leader's high watermark moves in smaller, more
// frequent steps.
const retryBackoff = 200 * time.Millisecond

// Versions used between Strata brokers; both ends are Strata, so there
// is nothing to negotiate.
const (
	fetchVersion       = 12 // flexible, by topic name, LastFetchedEpoch
	epochQueryVersion  = 4
	listOffsetsVersion = 8 // the first with the earliest-local timestamp (-4, KIP-405)
)

// errPartitionsChanged ends a fetch that the loop's partitions changed
// under: its long poll is cut short so that new partitions need not wait
// for it (up to replica.fetch.wait.max.ms).
var errPartitionsChanged = errors.New("replica: partitions changed during the fetch")

// loop replicates the partitions led by one broker.
type loop struct {
	f      *Fetcher
	leader int32
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returned
	log    *slog.Logger

	// session is the loop's fetch session with the leader (KIP-227):
	// full fetches until the leader opens one, then incremental ones.
	session fetchsession.Client

	mu      sync.Mutex
	parts   map[*partition.Partition]*follow
	changed chan struct{} // signalled when parts changes
}

// follow is the loop's state for one partition.
type follow struct {
	// epoch is the leader epoch the partition was truncated for; a new
	// epoch means asking the leader where the logs agree again.
	epoch int32
	// tiered: the leader answered OFFSET_MOVED_TO_TIERED_STORAGE; the log
	// must restart at the leader's local log start (tiered.go).
	tiered bool
	// retryAt: the partition's last fetch failed; it is left out of
	// fetches until then.
	retryAt time.Time
}

func newLoop(f *Fetcher, k loopKey) *loop {
	ctx, cancel := context.WithCancel(f.ctx)
	log := f.log.With("leader", k.leader)
	if f.opts.Fetchers > 1 {
		log = log.With("fetcher", k.fetcher)
	}
	return &loop{f: f, leader: k.leader, ctx: ctx, cancel: cancel, done: make(chan struct{}), log: log,
		parts: map[*partition.Partition]*follow{}, changed: make(chan struct{}, 1)}
}

// set replaces the loop's partitions, keeping the state of those it had.
func (l *loop) set(ps []*partition.Partition) {
	l.mu.Lock()
	next := make(map[*partition.Partition]*follow, len(ps))
	for _, p := range ps {
		st, ok := l.parts[p]
		if !ok {
			st = &follow{epoch: -1}
		}
		next[p] = st
	}
	l.parts = next
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

func (l *loop) snapshot() map[*partition.Partition]*follow {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[*partition.Partition]*follow, len(l.parts))
	for p, st := range l.parts {
		out[p] = st
	}
	return out
}

// run fetches until the loop is cancelled.
func (l *loop) run() {
	var cl *peer.Conn
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for l.ctx.Err() == nil {
		parts := l.snapshot()
		if len(parts) == 0 {
			select {
			case <-l.ctx.Done():
			case <-l.changed:
			}
			continue
		}
		if cl == nil {
			var err error
			if cl, err = l.dial(); err != nil {
				l.log.Info("cannot reach leader", "err", err)
				l.sleep(retryBackoff)
				continue
			}
		}
		if err := l.once(cl, parts); err != nil {
			if l.ctx.Err() != nil {
				return
			}
			cl.Close() // a cut request leaves the connection unusable
			cl = nil
			if errors.Is(err, errPartitionsChanged) {
				continue
			}
			l.log.Debug("replica fetch failed", "err", err)
			l.sleep(retryBackoff)
		}
	}
}

// dial connects to the leader.
func (l *loop) dial() (*peer.Conn, error) {
	b, ok := l.f.opts.Cache.Broker(l.leader)
	if !ok {
		return nil, fmt.Errorf("leader %d is not registered", l.leader)
	}
	return l.f.opts.Transport.Dial(l.ctx, b, fmt.Sprintf("strata-replica-%d", l.f.opts.NodeID))
}

func (l *loop) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.ctx.Done():
	case <-t.C:
	case <-l.changed:
	}
}

// once truncates what needs it and then fetches once.
func (l *loop) once(cl *peer.Conn, parts map[*partition.Partition]*follow) error {
	var stale []*partition.Partition
	for p, st := range parts {
		if st.epoch != p.LeaderEpoch() {
			stale = append(stale, p)
		}
	}
	if len(stale) > 0 {
		if err := l.truncate(cl, stale, parts); err != nil {
			return err
		}
	}
	if err := l.skipTiered(cl, parts); err != nil {
		return err
	}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaID = l.f.opts.NodeID
	req.ReplicaState.ID = l.f.opts.NodeID
	req.ReplicaState.Epoch = -1
	req.MinBytes = 1
	req.MaxBytes = l.f.opts.ResponseMaxBytes
	var asked []fetchsession.Partition
	ready := map[topicPartition]*partition.Partition{}
	now := time.Now()
	wait := l.f.opts.MaxWait // shortened to the first delayed partition's retry
	for p, st := range parts {
		if st.epoch != p.LeaderEpoch() || st.tiered {
			continue // truncation or the skip past the tier did not succeed yet
		}
		if st.retryAt.After(now) {
			wait = min(wait, st.retryAt.Sub(now))
			continue
		}
		asked = append(asked, fetchsession.Partition{
			Key: fetchsession.Key{Topic: p.Topic, Partition: p.Index}, Name: p.Topic,
			CurrentLeaderEpoch: st.epoch, // the epoch the answer's writes will carry
			FetchOffset:        p.Log().LogEndOffset(), LastFetchedEpoch: p.Log().LatestEpoch(),
			LogStartOffset: p.LogStartOffset(), MaxBytes: l.f.opts.PartitionMaxBytes,
		})
		ready[keyOf(p)] = p
	}
	if len(asked) == 0 {
		l.sleep(min(wait, retryBackoff))
		return nil
	}
	var send []fetchsession.Partition
	var forget []fetchsession.Key
	req.SessionID, req.SessionEpoch, send, forget = l.session.Build(asked)
	req.Topics, req.ForgottenTopics = fetchTopics(send), forgottenTopics(forget)
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	resp, err := l.fetch(cl, req)
	var sessionErr *kerr.Error
	switch {
	case errors.As(err, &sessionErr) && isSessionError(sessionErr):
		// The leader lost or moved on from our session: fetch in full at
		// once, on the same connection.
		l.log.Debug("fetch session reset", "err", err)
		l.session.Reset()
		return nil
	case err != nil:
		l.session.Reset() // the answer is lost: the leader may have moved the session on
		return err
	}
	l.session.Done(resp.SessionID, true)
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			p := ready[topicPartition{t.Topic, rp.Partition}]
			if p == nil {
				continue
			}
			if err := l.apply(p, parts[p], rp); err != nil {
				l.log.Info("replicating partition", "topic", p.Topic, "partition", p.Index, "err", err)
				parts[p].retryAt = time.Now().Add(retryBackoff)
			}
		}
	}
	return nil
}

// fetch sends a fetch and waits for its answer, cutting it short with
// errPartitionsChanged when the loop's partitions change meanwhile.
func (l *loop) fetch(cl *peer.Conn, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	ctx, cancel := context.WithCancel(l.ctx)
	defer cancel()
	go func() {
		select {
		case <-l.changed:
			cancel()
		case <-ctx.Done():
		}
	}()
	kresp, err := cl.Request(ctx, req)
	if err != nil {
		if ctx.Err() != nil && l.ctx.Err() == nil {
			return nil, errPartitionsChanged
		}
		return nil, fmt.Errorf("fetch from leader %d: %w", l.leader, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("fetch from leader %d: %w", l.leader, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp, nil
}

// apply takes one partition's fetch answer. Its writes carry st.epoch,
// the leader epoch the fetch was made under: the partition refuses them
// when it has moved on (partition.ErrNotLeaderOrFollower).
func (l *loop) apply(p *partition.Partition, st *follow, rp kmsg.FetchResponseTopicPartition) error {
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetMovedToTieredStorage):
		st.tiered = true
		return nil
	case errors.Is(err, kerr.OffsetOutOfRange):
		if p.Log().LogEndOffset() < rp.LogStartOffset {
			// The leader no longer has what we would fetch next.
			return p.TruncateFullyAndStartAt(st.epoch, rp.LogStartOffset)
		}
		st.epoch = -1 // diverged: ask the leader again
		return err
	default:
		return err
	}
	if err := p.AppendFollower(st.epoch, rp.RecordBatches); err != nil {
		st.epoch = -1
		return err
	}
	if err := p.SetFollowerHighWatermark(st.epoch, rp.HighWatermark); err != nil {
		st.epoch = -1
		return err
	}
	// Records the leader deleted go here too; the next fetch reports the
	// new log start, which the leader's DeleteRecords waits for.
	if err := p.SetFollowerLogStart(st.epoch, rp.LogStartOffset); err != nil {
		if errors.Is(err, partition.ErrNotLeaderOrFollower) {
			st.epoch = -1
		}
		return err
	}
	return nil
}
