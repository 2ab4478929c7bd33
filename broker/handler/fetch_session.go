package handler

import (
	"errors"
	"time"

	"github.com/strata-broker/strata/broker/fetchsession"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// noSessions stands for Env.Sessions when it is nil: a cache without
// slots, so that full fetches open no session.
var noSessions = fetchsession.New(0, 1, fetchsession.EvictAfter)

func (e *Env) sessions() *fetchsession.Cache {
	if e.Sessions != nil {
		return e.Sessions
	}
	return noSessions
}

// sessionKey is a partition's key in a session: by topic id from v13, by
// name before.
func sessionKey(byID bool, topic string, id [16]byte, partition int32) fetchsession.Key {
	if byID {
		return fetchsession.Key{TopicID: id, Partition: partition}
	}
	return fetchsession.Key{Topic: topic, Partition: partition}
}

// sessionContext interprets a fetch's session fields.
func (e *Env) sessionContext(r *kmsg.FetchRequest, now time.Time) *fetchsession.Context {
	byID := r.Version >= 13
	req := fetchsession.Request{Version: r.Version, SessionID: r.SessionID, Epoch: r.SessionEpoch, Follower: fetchReplicaID(r) >= 0}
	if byID {
		req.Name = func(id [16]byte) (string, bool) {
			t, ok := e.Cache.TopicByID(metadata.TopicID(id))
			return t.Name, ok
		}
	}
	for _, t := range r.Topics {
		name := t.Topic
		if byID {
			name, _ = req.Name(t.TopicID)
		}
		for _, p := range t.Partitions {
			req.Parts = append(req.Parts, fetchsession.Partition{
				Key: sessionKey(byID, t.Topic, t.TopicID, p.Partition), Name: name,
				FetchOffset: p.FetchOffset, LogStartOffset: p.LogStartOffset, MaxBytes: p.PartitionMaxBytes,
				CurrentLeaderEpoch: p.CurrentLeaderEpoch, LastFetchedEpoch: p.LastFetchedEpoch,
			})
		}
	}
	for _, t := range r.ForgottenTopics {
		for _, p := range t.Partitions {
			req.Forgotten = append(req.Forgotten, sessionKey(byID, t.Topic, t.TopicID, p))
		}
	}
	return e.sessions().NewContext(req, now)
}

// sessionRead is what one attempt at an incremental fetch reads: the
// request for the session's partitions that may have something to
// answer, in the session's order (a topic appears once per run of its
// partitions, as in Kafka's responses), with their indexes in x.Parts,
// and the partitions left out because their answer is known unchanged
// (idle), which the fetch still waits on. Any other fetch reads the
// request itself (read nil).
type sessionRead struct {
	req       *kmsg.FetchRequest
	read      []int
	idle      []*partition.Partition
	idleMarks []fetchMark // the mark of each of idle when checked
}

// sessionRequest is the read of one attempt at r. A consumer's session
// partition is idle when it is led here at the epoch the fetch names,
// its fetch offset is the high watermark, and that and the log start
// offset are what the session last answered: reading it gives nothing
// and its answer would be left out. A follower's fetch reads every
// partition (it reports the follower's progress), as does one the leader
// may redirect to a closer replica.
func (e *Env) sessionRequest(r *kmsg.FetchRequest, x *fetchsession.Context) sessionRead {
	if x.Kind != fetchsession.Incremental {
		return sessionRead{req: r}
	}
	skip := fetchReplicaID(r) < 0 && (r.Version < 11 || e.cfg().ReplicaSelectorClass != config.RackAwareReplicaSelector)
	byID, committed := r.Version >= 13, fetchReadCommitted(r)
	full := *r
	full.Topics = nil
	out := sessionRead{req: &full, read: make([]int, 0, len(x.Parts))}
	var stamp [2]int64
	if skip {
		// Taken before any lookup: a handle found under it stays current
		// while neither the metadata nor the partitions served change.
		stamp = [2]int64{e.Cache.Revision(), e.Partitions.Generation()}
	}
	var t metadata.Topic
	var tok bool
	looked := -1 // index of the partition whose topic t is
	for i, p := range x.Parts {
		if skip {
			pp := e.sessionPartition(x, i, stamp)
			if pp == nil {
				if looked < 0 || p.Name != x.Parts[looked].Name || p.TopicID != x.Parts[looked].TopicID {
					t, tok = e.topicByNameOrID(p.Name, p.TopicID, byID)
					looked = i
				}
				var code int16
				if pp, code = e.fetchPartition(r, t, tok, p.Partition, byID); code == 0 {
					x.SetHandle(i, &fetchsession.Handle{Value: pp, Stamp: stamp})
				}
			}
			if pp != nil && idle(pp, p, x.Answered[i], committed) {
				out.idle = append(out.idle, pp)
				out.idleMarks = append(out.idleMarks, fetchMark{p.FetchOffset, p.FetchOffset})
				continue
			}
		}
		out.read = append(out.read, i)
		n := len(full.Topics)
		if n == 0 || full.Topics[n-1].Topic != p.Name || full.Topics[n-1].TopicID != p.TopicID {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.Name, p.TopicID
			full.Topics = append(full.Topics, t)
			n++
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.LogStartOffset = p.Partition, p.FetchOffset, p.LogStartOffset
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p.MaxBytes, p.CurrentLeaderEpoch, p.LastFetchedEpoch
		full.Topics[n-1].Partitions = append(full.Topics[n-1].Partitions, rp)
	}
	return out
}

// sessionPartition is the partition kept with x.Parts[i] when it is
// still current at stamp.
func (e *Env) sessionPartition(x *fetchsession.Context, i int, stamp [2]int64) *partition.Partition {
	if h := x.Handle(i); h != nil && h.Stamp == stamp {
		p, _ := h.Value.(*partition.Partition)
		return p
	}
	return nil
}

// idle reports whether a consumer's session partition p, which the fetch
// finds (leads, or follows for a closer-replica fetch), has nothing to
// answer. For a read_committed consumer the last stable offset must be the
// high watermark too, so that the fetch waits on the same mark as a read
// of p would.
func idle(pp *partition.Partition, p fetchsession.Partition, last fetchsession.Answered, committed bool) bool {
	if checkLeaderEpoch(p.CurrentLeaderEpoch, pp.LeaderEpoch()) != 0 {
		return false
	}
	hw := pp.HighWatermark()
	if committed && lastStableOffset(pp, hw) != hw {
		return false
	}
	// Below the local log start the offset would be read from the tier.
	return p.FetchOffset == hw && hw == last.HighWatermark && hw >= pp.Log().LogStartOffset() && pp.LogStartOffset() == last.LogStartOffset
}

// sessionErrorCode is the Kafka error of a session error.
func sessionErrorCode(err error) int16 {
	switch {
	case errors.Is(err, fetchsession.ErrSessionNotFound):
		return kerr.FetchSessionIDNotFound.Code
	case errors.Is(err, fetchsession.ErrInvalidEpoch):
		return kerr.InvalidFetchSessionEpoch.Code
	case errors.Is(err, fetchsession.ErrTopicID):
		return kerr.FetchSessionTopicIDError.Code
	default:
		return kerr.UnknownServerError.Code
	}
}

// sessionFailed is the answer to a fetch whose session failed: the error
// and no partitions.
func sessionFailed(r *kmsg.FetchRequest, id int32, err error) *kmsg.FetchResponse {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode, resp.SessionID = sessionErrorCode(err), id
	return resp
}

// sessionResult finishes a fetch's answer for its session: the session
// id, and for an incremental fetch only the partitions whose answer
// changed. Left-out partitions carry no records, so the regions stay as
// they are, in order; a session error drops them all.
func sessionResult(r *kmsg.FetchRequest, x *fetchsession.Context, read []int, res Result) Result {
	resp := res.Resp.(*kmsg.FetchResponse)
	var answers []fetchsession.Answer
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			answers = append(answers, fetchsession.Answer{
				Records: len(p.RecordBatches) > 0, HighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset,
				PreferredReadReplica: p.PreferredReadReplica, ErrorCode: p.ErrorCode, DivergingEpoch: p.DivergingEpoch.Epoch >= 0,
			})
		}
	}
	id, keep, err := x.Respond(read, answers, time.Now())
	if err != nil {
		for _, rg := range res.Regions {
			rg.Release()
		}
		return Result{Resp: sessionFailed(r, id, err)}
	}
	if r.Version >= 7 {
		resp.SessionID = id
	}
	if x.Kind != fetchsession.Incremental {
		return res
	}
	i, topics := 0, resp.Topics[:0]
	for _, t := range resp.Topics {
		parts := t.Partitions[:0]
		for _, p := range t.Partitions {
			if keep[i] {
				parts = append(parts, p)
			}
			i++
		}
		if len(parts) > 0 {
			t.Partitions = parts
			topics = append(topics, t)
		}
	}
	resp.Topics = topics
	return res
}
