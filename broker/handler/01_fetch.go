package handler

import (
	"context"
	"slices"
	"time"

	"github.com/strata-broker/strata/broker/fetchsession"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch: v4-17
//
// Behavior:
// * Record bytes are not copied: each partition's whole batches are a file
//   region written to the socket with sendfile.
// * Long-poll: when fewer than min.bytes are ready the request waits, up to
//   max.wait.ms, and is woken by appends to any partition it asks for.
//   A read stops at the end of its segment, so a partition whose fetch
//   offset is in a segment older than the one holding the high watermark
//   (the log end for a follower) answers at once with what that segment
//   holds from there, as does a cold partition once its read from the
//   tier is done (Kafka's DelayedFetch and DelayedRemoteFetch).
// * Any partition error (unknown topic, not leader, offset out of range,
//   fenced/unknown leader epoch) answers at once.
// * A consumer needs READ on each topic, a follower CLUSTER_ACTION on the
//   cluster: TOPIC_AUTHORIZATION_FAILED otherwise (an unknown topic id is
//   UNKNOWN_TOPIC_ID first), as Kafka answers. An idle partition of a
//   session is not read, so it is checked once it has records again.
// * max.bytes and partition max bytes bound the response, but the first
//   partition with data always gets at least one whole batch (KIP-74); a
//   later partition whose next batch does not fit gets nothing.
// * Incremental fetch sessions (KIP-227, broker/fetchsession), v7+, for
//   consumers and followers (whose sessions are privileged), up to
//   max.incremental.fetch.session.cache.slots: epoch 0 opens a session
//   (closing the one named), -1 fetches without one; an incremental fetch
//   names only partitions that are new or whose fetch changed, plus the
//   ones to forget, and reads its session's, in the session's order
//   (those that last answered records last), but for a consumer's idle
//   ones: at the high watermark and log start last answered, led here at
//   the epoch asked, which it only waits on. Its answer carries only
//   partitions with records, a new high watermark or log start offset, a
//   preferred read replica or an error. An unknown session id is
//   FETCH_SESSION_ID_NOT_FOUND, an epoch other than the session's next
//   (also one overtaken while the fetch waited) INVALID_FETCH_SESSION_EPOCH,
//   a session used both by topic id (v13+) and by name
//   FETCH_SESSION_TOPIC_ID_ERROR; each is answered at once, without
//   partitions. A session's partition whose topic id is unknown is
//   UNKNOWN_TOPIC_ID. Before v7 no session exists.
// * LastStableOffset (v4+) is the partition's last stable offset: the
//   first offset of the oldest transaction still open or whose marker is
//   not yet below the high watermark, else the high watermark (a follower
//   serving consumers computes it from its own). A read_committed
//   consumer's read stops at it, whole batches below it (Kafka's
//   FetchIsolation.TXN_COMMITTED), and the answer carries the aborted
//   transactions (producer id, first offset) overlapping the records read,
//   from the segments' transaction indexes, for the consumer to drop. A
//   read from the tier carries none yet (the tier keeps no transaction
//   index). A follower's fetch reads up to the log end whatever its
//   isolation level. An incremental session's answer includes a partition
//   for a new high watermark, not for a new last stable offset alone, as
//   Kafka's does; records made readable by it are included anyway.
// * An offset below the local log start that the tier holds is read from
//   the bucket through the chunk cache, still as a file region; each
//   partition is located once per attempt (partition.Locate, no I/O for a
//   hot offset) and the cold partitions of one fetch are read concurrently.
//   A cold offset no remote copy holds is OFFSET_OUT_OF_RANGE; remote
//   metadata that cannot be loaded is REPLICA_NOT_AVAILABLE (retriable, as
//   Kafka answers while it is not ready); a failed read of the bucket or
//   the disk is KAFKA_STORAGE_ERROR.
// * A follower's fetch (replica id ≥ 0; ReplicaState from v15) reads up to
//   the log end, records the follower's log end (its fetch offset) and
//   log start (which DeleteRecords waits on), moves the high watermark
//   and brings a caught-up follower back into the ISR.
//   It answers at once when the high watermark moved since its last answer
//   (Kafka's followerNeedsHwUpdate): followers learn it only this way, and
//   consumers reading from them wait on it.
// * Fetch from the closest replica (KIP-392), v11+ consumers only (older
//   ones cannot be redirected, so they only ever reach leaders):
//   - a follower serves them as a leader would, up to its own high
//     watermark (the one the leader last sent), with the leader epoch
//     check; an offset between that and its log end reads nothing yet, one
//     past its log end or below its log start is OFFSET_OUT_OF_RANGE (the
//     client goes back to the leader); a broker that is no replica answers
//     NOT_LEADER_OR_FOLLOWER. Every other API stays leader-only.
//   - with replica.selector.class = RackAwareReplicaSelector, the leader
//     answers a consumer whose rack (client.rack) is not the leader's with
//     PreferredReadReplica: an alive in-sync follower in that rack that
//     holds the fetch offset (partition.PreferredReadReplica), and no
//     records, at once, as Kafka does; else -1 and the records.
//
// Version notes:
// * v4: isolation level, last stable offset; v5: log start offset
// * v7: sessions; v9: current leader epoch (KIP-320)
// * v11: rack id and preferred read replica (KIP-392)
// * v12+: flexible; v13+: topics by id (KIP-516)

func handleFetch(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.FetchRequest)
	sess := env.sessionContext(r, time.Now())
	if sess.Kind == fetchsession.Failed {
		return Result{Resp: sessionFailed(r, fetchsession.InvalidSessionID, sess.Err)}, nil
	}
	deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	wake := make(chan struct{}, 1)
	waited, registered := false, false
	for {
		read := env.sessionRequest(r, sess)
		f := buildFetch(ctx, env, req, read.req)
		// Idle session partitions are not read but are waited on.
		f.parts, f.marks = append(f.parts, read.idle...), append(f.marks, read.idleMarks...)
		ready, expired := f.ready(r.MinBytes), !time.Now().Before(deadline)
		if ready || expired || env.draining() {
			if registered { // else no partition holds wake
				for _, p := range f.parts {
					p.Unwait(wake)
				}
			}
			if waited && expired && !ready {
				env.Metrics.fetchExpired(f.replica)
			}
			return sessionResult(r, sess, read.read, f.result(env)), nil
		}
		f.release()
		moved := false
		registered = true
		for i, p := range f.parts {
			p.Wait(wake)
			// An append between the read and Wait would not wake us.
			moved = moved || f.mark(p) != f.marks[i]
		}
		if moved {
			continue
		}
		if !sleepUntilWoken(ctx, wake, deadline, env.Draining) {
			for _, p := range f.parts {
				p.Unwait(wake)
			}
			return Result{}, ctx.Err()
		}
		waited = true
	}
}

// sleepUntilWoken waits for a wake-up, the deadline, draining or the end
// of ctx; it reports false only for the last.
func sleepUntilWoken(ctx context.Context, wake <-chan struct{}, deadline time.Time, draining <-chan struct{}) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-wake:
	case <-timer.C:
	case <-draining:
	case <-ctx.Done():
		return false
	}
	return true
}

// fetchBuild is one attempt at answering a fetch.
type fetchBuild struct {
	resp      *kmsg.FetchResponse
	marker    *wire.Marker
	regions   []wire.Region
	parts     []*partition.Partition
	marks     []fetchMark // mark of each of parts when read
	replica   bool        // a follower's fetch: reads up to the log end
	committed bool        // a read_committed consumer's: reads up to the LSO
	bytes     int64
	answerNow bool     // answer at once: a partition failed, was redirected, or cannot gain bytes by waiting
	topicOf   []string // topic name per region, for metrics
}

// fetchMark is what a waiting fetch watches on one partition.
type fetchMark struct{ upTo, hw int64 }

// mark is where the fetch may read p up to (the high watermark for a
// consumer, the last stable offset for a read_committed one, the log end
// for a follower) and the high watermark, which a follower's fetch must
// also bring back. A fetch waits until it moves.
func (f *fetchBuild) mark(p *partition.Partition) fetchMark {
	hw := p.HighWatermark()
	switch {
	case f.replica:
		return fetchMark{p.Log().LogEndOffset(), hw}
	case f.committed:
		return fetchMark{lastStableOffset(p, hw), hw}
	}
	return fetchMark{hw, hw}
}

// final reports whether waiting cannot add to p's read at offset, so that
// the fetch answers at once whatever min.bytes asks, as Kafka does: a read
// never crosses a segment's end, so one from a segment older than the one
// holding the mark gains nothing from appends (DelayedFetch.tryComplete),
// and a cold read is answered once it is done (DelayedRemoteFetch).
func (f *fetchBuild) final(p *partition.Partition, loc partition.Location, offset int64) bool {
	return loc.Cold() || p.Log().OnOlderSegment(offset, f.mark(p).upTo)
}

func (f *fetchBuild) ready(minBytes int32) bool {
	return f.answerNow || f.bytes >= int64(minBytes)
}

func (f *fetchBuild) release() {
	for _, r := range f.regions {
		r.Release()
	}
	f.regions = nil
}

func (f *fetchBuild) result(env *Env) Result {
	for i, r := range f.regions {
		env.Metrics.bytesOut(f.topicOf[i], int(r.Length()))
	}
	return Result{Resp: f.resp, Marker: f.marker, Regions: f.regions}
}

func buildFetch(ctx context.Context, env *Env, req *Request, r *kmsg.FetchRequest) *fetchBuild {
	f := &fetchBuild{resp: r.ResponseKind().(*kmsg.FetchResponse), marker: wire.NewMarker()}
	byID := r.Version >= 13
	cold := locateCold(ctx, env, r, byID)
	defer cold.release()
	replica := fetchReplicaID(r)
	f.replica = replica >= 0
	f.committed = fetchReadCommitted(r)
	// A follower needs CLUSTER_ACTION, a consumer READ on each topic.
	followerDenied := f.replica && !env.allowedCluster(req, aclClusterAction)
	selectReplica := !f.replica && r.Version >= 11 && env.cfg().ReplicaSelectorClass == config.RackAwareReplicaSelector
	now := time.Now()
	remaining := int64(r.MaxBytes)
	if r.Version < 3 || remaining <= 0 {
		remaining = 1<<31 - 1
	}
	for _, rt := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t, tok := env.topicByNameOrID(rt.Topic, rt.TopicID, byID)
		denied := followerDenied || !f.replica && (tok || !byID) && !env.allowedTopic(req, aclRead, topicName(rt.Topic, t, tok))
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.RecordBatches = []byte{} // empty, not null: librdkafka rejects a null record set
			var p *partition.Partition
			code := kerr.TopicAuthorizationFailed.Code
			if !denied {
				p, code = env.fetchPartition(r, t, tok, rp.Partition, byID)
			}
			if code == 0 {
				code = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch())
			}
			if code != 0 {
				sp.ErrorCode = code
				f.answerNow = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if selectReplica {
				if id := p.PreferredReadReplica(r.Rack, rp.FetchOffset, env.rackOf); id >= 0 {
					hw := p.HighWatermark()
					sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, lastStableOffset(p, hw), p.LogStartOffset()
					sp.PreferredReadReplica = id
					f.answerNow = true
					st.Partitions = append(st.Partitions, sp)
					continue
				}
			}
			if replica >= 0 {
				// A follower's fetch offset is its log end: it moves the
				// high watermark and may bring it back into the ISR.
				if isr := p.UpdateFollower(replica, rp.FetchOffset, rp.LogStartOffset, now); isr != nil {
					env.Partitions.ExpandISR(ctx, p, isr)
				}
			}
			f.parts, f.marks = append(f.parts, p), append(f.marks, f.mark(p))
			hw := p.HighWatermark()
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, lastStableOffset(p, hw), p.LogStartOffset()
			if replica >= 0 && p.HighWatermarkNews(replica, hw) {
				f.answerNow = true
			}
			limit := min(int64(rp.PartitionMaxBytes), remaining)
			if limit <= 0 && f.bytes == 0 {
				limit = 1
			}
			loc, err := cold.locate(ctx, p, rp.FetchOffset)
			switch {
			case err != nil:
				limit = 0
			case replica >= 0 && loc.Cold():
				// KIP-405: a follower does not copy the tier back to its
				// disk; it starts at our local log start (ListOffsets -4).
				sp.ErrorCode = kerr.OffsetMovedToTieredStorage.Code
				f.answerNow = true
				limit = 0
			case f.final(p, loc, rp.FetchOffset):
				f.answerNow = true
			}
			if limit > 0 {
				read := p.Read
				switch {
				case replica >= 0:
					read = p.ReadReplica
				case f.committed:
					read = p.ReadCommitted
				}
				var region wire.Region
				var n int64
				region, n, err = readRegion(ctx, p, read, loc, rp.FetchOffset, int(limit), cold)
				if err == nil && n > limit && f.bytes > 0 {
					// A read returns at least one batch, but only the
					// first partition with data may exceed the limits
					// (KIP-74); Kafka sends a later one a truncated
					// batch, of which clients read nothing.
					region.Release()
					n = 0
				}
				if err == nil && f.committed {
					// Before the records go in: without their aborted
					// transactions they must not go out.
					if sp.AbortedTransactions, err = abortedTxns(ctx, p, loc, rp.FetchOffset, n); err != nil && n > 0 {
						region.Release()
					}
				}
				if err == nil && n > 0 {
					sp.RecordBatches = f.marker.Bytes(len(f.regions))
					f.regions = append(f.regions, region)
					f.topicOf = append(f.topicOf, t.Name)
					f.bytes += n
					remaining -= n
				}
			}
			if err != nil {
				sp.ErrorCode = storageErrorCode(err)
				f.answerNow = true
				switch sp.ErrorCode {
				case kerr.OffsetOutOfRange.Code:
				case kerr.KafkaStorageError.Code:
					env.Log.Error("fetch read", "topic", t.Name, "partition", rp.Partition, "offset", rp.FetchOffset, "err", err)
				default:
					env.Log.Warn("fetch read", "topic", t.Name, "partition", rp.Partition, "offset", rp.FetchOffset, "err", err)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		f.resp.Topics = append(f.resp.Topics, st)
	}
	return f
}

// fetchReplicaID is the replica id of a fetch: a follower's broker id, or
// -1 for a consumer.
func fetchReplicaID(r *kmsg.FetchRequest) int32 {
	if r.Version >= 15 {
		return r.ReplicaState.ID
	}
	return r.ReplicaID
}

// fetchPartition finds the partition a fetch reads: one this broker leads,
// or, for a v11+ consumer (KIP-392), one it follows.
func (e *Env) fetchPartition(r *kmsg.FetchRequest, t metadata.Topic, ok bool, idx int32, byID bool) (*partition.Partition, int16) {
	p, code := e.localPartition(t, ok, idx, byID)
	if code != kerr.NotLeaderForPartition.Code || r.Version < 11 || fetchReplicaID(r) >= 0 {
		return p, code
	}
	if p, here := e.Partitions.Get(t.Name, idx); here && p.TopicID == t.ID && slices.Contains(t.Partitions[idx].Replicas, e.cfg().NodeID) {
		return p, 0
	}
	return nil, code
}

// rackOf is the rack of a live broker.
func (e *Env) rackOf(id int32) (string, bool) {
	b, ok := e.Cache.Broker(id)
	return b.Rack, ok
}

// checkLeaderEpoch compares a client's view of the leader epoch with ours
// (KIP-320); -1 means the client does not know it.
func checkLeaderEpoch(client, ours int32) int16 {
	switch {
	case client == -1 || client == ours:
		return 0
	case client < ours:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// sliceRegion adapts a segment slice to a wire region.
type sliceRegion struct{ s segment.Slice }

func (r sliceRegion) Fd() uintptr   { return r.s.File.Fd() }
func (r sliceRegion) Offset() int64 { return r.s.Pos }
func (r sliceRegion) Length() int64 { return r.s.Len }
func (r sliceRegion) Release()      { r.s.Release() }
