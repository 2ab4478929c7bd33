package handler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/fetchsession"
	"github.com/strata-broker/strata/tier/record"
)

// sessionBroker is broker 1 with a fetch session cache of slots and
// topic "t" of n partitions.
func sessionBroker(t *testing.T, slots, n int32) *testBroker {
	t.Helper()
	b := newTestBroker(t, brokerOpts{})
	b.env.Sessions = fetchsession.New(int(slots), 1, fetchsession.EvictAfter)
	b.createTopic(t, "t", n, nil)
	return b
}

// sessionProduce appends one record of value to t-idx.
func sessionProduce(t *testing.T, b *testBroker, idx int32, value string) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = idx, record.NewBatch(record.BuildOptions{}, record.Record{Value: []byte(value)})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := b.do(t, req).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
}

// sessionFetch is a fetch of t at version v, in session id at epoch,
// naming offsets (partition → fetch offset) and forgetting forget. It
// answers at once (min bytes 0) unless wait is set.
type sessionFetch struct {
	v       int16
	id      int32
	epoch   int32
	offsets map[int32]int64
	forget  []int32
	replica int32 // -1: a consumer
	wait    time.Duration
	max     int32 // max bytes (0: 1 MiB)
}

func (f sessionFetch) send(t *testing.T, b *testBroker) *kmsg.FetchResponse {
	t.Helper()
	id, _ := b.env.Cache.Topic("t")
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(f.v)
	req.SessionID, req.SessionEpoch = f.id, f.epoch
	req.ReplicaID, req.ReplicaState.ID = f.replica, f.replica
	req.MaxBytes = 1 << 20
	if f.max > 0 {
		req.MaxBytes = f.max
	}
	if f.wait > 0 {
		req.MinBytes, req.MaxWaitMillis = 1, int32(f.wait.Milliseconds())
	}
	if len(f.offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "t", id.ID
		for _, p := range slices.Sorted(mapKeys(f.offsets)) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, f.offsets[p], 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(f.forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = "t", id.ID, f.forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return b.do(t, req).(*kmsg.FetchResponse)
}

func mapKeys(m map[int32]int64) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// answered is "p:values" for each partition an answer carries, in
// order, with its error when it has one.
func answered(t *testing.T, resp *kmsg.FetchResponse) string {
	t.Helper()
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			_, values := mustRecords(t, rp.RecordBatches)
			s := fmt.Sprintf("%d:%s", rp.Partition, strings.Join(values, ","))
			if rp.ErrorCode != 0 {
				s += "!" + kerr.ErrorForCode(rp.ErrorCode).Error()
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

func wantAnswer(t *testing.T, step string, resp *kmsg.FetchResponse, code int16, parts string) {
	t.Helper()
	if resp.ErrorCode != code {
		t.Fatalf("%s: error %v, want %v", step, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(code))
	}
	if got := answered(t, resp); got != parts {
		t.Fatalf("%s: answered %q, want %q", step, got, parts)
	}
}

// TestFetchSessionConsumer walks a consumer's session by name (v12) and
// by topic id (v13, v17): a full fetch opens it, incremental fetches
// carry only what changed, forgotten partitions leave, and bad ids and
// epochs are answered as Kafka does.
func TestFetchSessionConsumer(t *testing.T) {
	for _, v := range []int16{12, 13, 17} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			b := sessionBroker(t, 10, 3)
			sessionProduce(t, b, 0, "a")
			resp := sessionFetch{v: v, replica: -1, offsets: map[int32]int64{0: 0, 1: 0, 2: 0}}.send(t, b)
			wantAnswer(t, "full", resp, 0, "0:a 1: 2:")
			id := resp.SessionID
			if id == 0 {
				t.Fatal("the full fetch opened no session")
			}
			resp = sessionFetch{v: v, replica: -1, id: id, epoch: 1, offsets: map[int32]int64{0: 1}}.send(t, b)
			wantAnswer(t, "nothing new", resp, 0, "")
			if resp.SessionID != id {
				t.Fatalf("incremental answer carries session %d, want %d", resp.SessionID, id)
			}
			sessionProduce(t, b, 1, "b")
			resp = sessionFetch{v: v, replica: -1, id: id, epoch: 2}.send(t, b)
			wantAnswer(t, "one new record", resp, 0, "1:b")
			resp = sessionFetch{v: v, replica: -1, id: id, epoch: 3, offsets: map[int32]int64{1: 1}}.send(t, b)
			wantAnswer(t, "read up", resp, 0, "")
			sessionProduce(t, b, 0, "c")
			resp = sessionFetch{v: v, replica: -1, id: id, epoch: 4, forget: []int32{0}}.send(t, b)
			wantAnswer(t, "forgotten partition", resp, 0, "")
			sessionProduce(t, b, 2, "d")
			resp = sessionFetch{v: v, replica: -1, id: id, epoch: 5, offsets: map[int32]int64{0: 1}}.send(t, b)
			wantAnswer(t, "re-added partition", resp, 0, "2:d 0:c")

			resp = sessionFetch{v: v, replica: -1, id: id, epoch: 5}.send(t, b)
			wantAnswer(t, "repeated epoch", resp, kerr.InvalidFetchSessionEpoch.Code, "")
			resp = sessionFetch{v: v, replica: -1, id: id + 1, epoch: 6}.send(t, b)
			wantAnswer(t, "unknown id", resp, kerr.FetchSessionIDNotFound.Code, "")
			if resp.SessionID != 0 {
				t.Fatalf("session error carries session %d", resp.SessionID)
			}
			other := int16(12)
			if v == 12 {
				other = 13
			}
			resp = sessionFetch{v: other, replica: -1, id: id, epoch: 6}.send(t, b)
			wantAnswer(t, "topic ids switched", resp, kerr.FetchSessionTopicIDError.Code, "")

			// Epoch 0 naming the session closes it and opens another.
			resp = sessionFetch{v: v, replica: -1, id: id, epoch: 0, offsets: map[int32]int64{2: 1}}.send(t, b)
			wantAnswer(t, "reopen", resp, 0, "2:")
			if resp.SessionID == 0 || resp.SessionID == id {
				t.Fatalf("reopened session %d (old %d)", resp.SessionID, id)
			}
			resp = sessionFetch{v: v, replica: -1, id: id, epoch: 6}.send(t, b)
			wantAnswer(t, "closed session", resp, kerr.FetchSessionIDNotFound.Code, "")
			// Epoch -1 opens none.
			resp = sessionFetch{v: v, replica: -1, epoch: -1, offsets: map[int32]int64{2: 1}}.send(t, b)
			wantAnswer(t, "sessionless", resp, 0, "2:")
			if resp.SessionID != 0 || b.env.Sessions.Sessions() != 1 {
				t.Fatalf("sessionless fetch: session %d, %d cached", resp.SessionID, b.env.Sessions.Sessions())
			}
		})
	}
}

// TestFetchSessionBeforeV7 checks that an old fetch never opens one.
func TestFetchSessionBeforeV7(t *testing.T) {
	b := sessionBroker(t, 10, 1)
	resp := sessionFetch{v: 6, replica: -1, offsets: map[int32]int64{0: 0}}.send(t, b)
	if resp.SessionID != 0 || b.env.Sessions.Sessions() != 0 {
		t.Fatalf("v6 fetch: session %d, %d cached", resp.SessionID, b.env.Sessions.Sessions())
	}
}

// TestFetchSessionUnknownTopicID: a session's partition whose topic id
// is unknown answers UNKNOWN_TOPIC_ID, in every incremental answer.
func TestFetchSessionUnknownTopicID(t *testing.T) {
	b := sessionBroker(t, 10, 1)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(13)
	req.SessionEpoch, req.MaxBytes, req.ReplicaID = 0, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = [16]byte{1, 2, 3}
	rp := kmsg.NewFetchRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := b.do(t, req).(*kmsg.FetchResponse)
	if resp.SessionID == 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("full fetch of an unknown topic id: %+v", resp)
	}
	req.SessionID, req.SessionEpoch, req.Topics = resp.SessionID, 1, nil
	resp = b.do(t, req).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].TopicID != rt.TopicID || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("incremental fetch of an unknown topic id: %+v", resp)
	}
}

// TestFetchSessionFollowerPrivileged: a follower's full fetch evicts a
// consumer's young session when the cache is full; a consumer's does
// not evict the follower's.
func TestFetchSessionFollowerPrivileged(t *testing.T) {
	b := sessionBroker(t, 1, 2)
	consumer := sessionFetch{v: 12, replica: -1, offsets: map[int32]int64{0: 0, 1: 0}}.send(t, b).SessionID
	if consumer == 0 {
		t.Fatal("no consumer session")
	}
	sessionProduce(t, b, 0, "a")
	resp := sessionFetch{v: 17, replica: 2, offsets: map[int32]int64{0: 0}}.send(t, b)
	wantAnswer(t, "follower full", resp, 0, "0:a")
	follower := resp.SessionID
	if follower == 0 {
		t.Fatal("the follower's fetch opened no session")
	}
	wantAnswer(t, "evicted consumer", sessionFetch{v: 12, replica: -1, id: consumer, epoch: 1}.send(t, b), kerr.FetchSessionIDNotFound.Code, "")
	if id := (sessionFetch{v: 12, replica: -1, offsets: map[int32]int64{0: 0, 1: 0}}).send(t, b).SessionID; id != 0 {
		t.Fatal("a consumer's session evicted the follower's")
	}
	// The follower's incremental fetches carry only what changed.
	wantAnswer(t, "follower idle", sessionFetch{v: 17, replica: 2, id: follower, epoch: 1, offsets: map[int32]int64{0: 1}}.send(t, b), 0, "")
	sessionProduce(t, b, 1, "b")
	wantAnswer(t, "follower new record", sessionFetch{v: 17, replica: 2, id: follower, epoch: 2, offsets: map[int32]int64{1: 0}}.send(t, b), 0, "1:b")
}

// TestFetchSessionLongPoll: an incremental fetch still waits for
// min.bytes and is woken by an append.
func TestFetchSessionLongPoll(t *testing.T) {
	b := sessionBroker(t, 10, 2)
	id := sessionFetch{v: 12, replica: -1, offsets: map[int32]int64{0: 0, 1: 0}}.send(t, b).SessionID
	got := make(chan *kmsg.FetchResponse, 1)
	go func() { got <- sessionFetch{v: 12, replica: -1, id: id, epoch: 1, wait: time.Minute}.send(t, b) }()
	sessionProduce(t, b, 1, "x")
	wantAnswer(t, "woken", <-got, 0, "1:x")
}

// TestFetchSessionRotates: with max.bytes room for one partition, an
// incremental fetch reads the partitions that did not answer records
// last time first, so each gets its turn.
func TestFetchSessionRotates(t *testing.T) {
	b := sessionBroker(t, 10, 2)
	big := strings.Repeat("x", 1000)
	sessionProduce(t, b, 0, big)
	sessionProduce(t, b, 1, big)
	resp := sessionFetch{v: 12, replica: -1, max: 10, offsets: map[int32]int64{0: 0, 1: 0}}.send(t, b)
	wantAnswer(t, "full", resp, 0, "0:"+big+" 1:")
	id := resp.SessionID
	resp = sessionFetch{v: 12, replica: -1, id: id, epoch: 1, max: 10, offsets: map[int32]int64{0: 1}}.send(t, b)
	wantAnswer(t, "second", resp, 0, "1:"+big)
	sessionProduce(t, b, 0, big)
	resp = sessionFetch{v: 12, replica: -1, id: id, epoch: 2, max: 10, offsets: map[int32]int64{1: 1}}.send(t, b)
	wantAnswer(t, "third", resp, 0, "0:"+big)
}

// TestFetchSessionIdleChanges: a session partition at its high watermark
// is not read, yet its answer is still carried when its log start moved.
func TestFetchSessionIdleChanges(t *testing.T) {
	b := sessionBroker(t, 10, 2)
	sessionProduce(t, b, 0, "a")
	sessionProduce(t, b, 0, "b")
	resp := sessionFetch{v: 12, replica: -1, offsets: map[int32]int64{0: 2, 1: 0}}.send(t, b)
	wantAnswer(t, "full", resp, 0, "0: 1:")
	id := resp.SessionID
	wantAnswer(t, "idle", sessionFetch{v: 12, replica: -1, id: id, epoch: 1}.send(t, b), 0, "")
	del := b.do(t, deleteRecordsReq("t", 0, 1)).(*kmsg.DeleteRecordsResponse)
	if code := del.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("delete records: %v", kerr.ErrorForCode(code))
	}
	resp = sessionFetch{v: 12, replica: -1, id: id, epoch: 2}.send(t, b)
	wantAnswer(t, "log start moved", resp, 0, "0:")
	if got := resp.Topics[0].Partitions[0].LogStartOffset; got != 1 {
		t.Fatalf("log start %d, want 1", got)
	}
	wantAnswer(t, "idle again", sessionFetch{v: 12, replica: -1, id: id, epoch: 3}.send(t, b), 0, "")
}

// TestFetchSessionIdleTopicDeleted: the partitions an idle session keeps
// are looked up again once the metadata changed, so that a deleted topic
// is answered with its error.
func TestFetchSessionIdleTopicDeleted(t *testing.T) {
	b := sessionBroker(t, 10, 2)
	resp := sessionFetch{v: 12, replica: -1, offsets: map[int32]int64{0: 0, 1: 0}}.send(t, b)
	wantAnswer(t, "full", resp, 0, "0: 1:")
	id := resp.SessionID
	wantAnswer(t, "idle", sessionFetch{v: 12, replica: -1, id: id, epoch: 1}.send(t, b), 0, "")
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis, del.TopicNames = 5000, []string{"t"}
	if code := b.send(t, del, 5).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("delete topic: %v", kerr.ErrorForCode(code))
	}
	want := kerr.UnknownTopicOrPartition.Error()
	wantAnswer(t, "deleted", sessionFetch{v: 12, replica: -1, id: id, epoch: 2}.send(t, b), 0, "0:!"+want+" 1:!"+want)
}
