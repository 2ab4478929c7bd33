package txnmarkers

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/metadata"
)

// fakeLeaders stands for the partitions' leaders: each request is
// recorded and answered per partition by answer (nil: success); a
// broker id in down fails the send.
type fakeLeaders struct {
	mu     sync.Mutex
	sent   map[int32][]txn.TopicPartition // by broker, in order
	answer func(broker int32, tp txn.TopicPartition, attempt int) int16
	down   map[int32]int // broker: sends that fail first
	tries  map[txn.TopicPartition]int
}

func newFakeLeaders() *fakeLeaders {
	return &fakeLeaders{sent: map[int32][]txn.TopicPartition{}, down: map[int32]int{}, tries: map[txn.TopicPartition]int{}}
}

func (f *fakeLeaders) Request(_ context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.WriteTxnMarkersRequest)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down[id] > 0 {
		f.down[id]--
		return nil, errors.New("connection refused")
	}
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, rm := range r.Markers {
		sm := kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = rm.ProducerID
		for _, rt := range rm.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				tp := txn.TopicPartition{Topic: rt.Topic, Partition: p}
				f.sent[id] = append(f.sent[id], tp)
				sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = p
				if f.answer != nil {
					sp.ErrorCode = f.answer(id, tp, f.tries[tp])
				}
				f.tries[tp]++
				st.Partitions = append(st.Partitions, sp)
			}
			sm.Topics = append(sm.Topics, st)
		}
		resp.Markers = append(resp.Markers, sm)
	}
	return resp, nil
}

func (f *fakeLeaders) sentTo(id int32) []txn.TopicPartition {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent[id])
}

// cacheWith is a cache of topic t whose partition i is led by leaders[i].
func cacheWith(leaders ...int32) *metadata.Cache {
	c := metadata.NewCache()
	c.Load(1, partitionChanges(leaders...))
	return c
}

func partitionChanges(leaders ...int32) []metadata.Change {
	chs := []metadata.Change{{Kind: metadata.ChangeTopic, Topic: "t", ID: metadata.NewTopicID()}}
	for i, l := range leaders {
		chs = append(chs, metadata.Change{Kind: metadata.ChangePartition, Topic: "t", Partition: int32(i),
			State: metadata.PartitionState{Replicas: []int32{l}, Leader: l, ISR: []int32{l}, LeaderEpoch: 1}})
	}
	return chs
}

func markersFor(parts ...int32) txn.Markers {
	m := txn.Markers{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 1, Commit: true, CoordinatorEpoch: 4}
	for _, p := range parts {
		m.Partitions = append(m.Partitions, txn.TopicPartition{Topic: "t", Partition: p})
	}
	return m
}

// run writes m's markers with w and reports whether done was called by
// the time every goroutine of the bubble is blocked.
func run(t *testing.T, w *Writer, m txn.Markers) bool {
	t.Helper()
	doneCh := make(chan struct{})
	w.WriteMarkers(m, func() { close(doneCh) })
	synctest.Wait()
	select {
	case <-doneCh:
		return true
	default:
		return false
	}
}

func tps(parts ...int32) []txn.TopicPartition {
	return markersFor(parts...).Partitions
}

// TestWritesGroupedByLeader: one request per leader, this broker's through
// Local, the others' through Peers; done once all answered.
func TestWritesGroupedByLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		local, peers := newFakeLeaders(), newFakeLeaders()
		w := New(Config{NodeID: 1, Cache: cacheWith(1, 2, 1), Local: local, Peers: peers})
		defer w.Close()
		if !run(t, w, markersFor(0, 1, 2)) {
			t.Fatal("done not called")
		}
		got := local.sentTo(1)
		slices.SortFunc(got, func(a, b txn.TopicPartition) int { return int(a.Partition - b.Partition) })
		if !slices.Equal(got, tps(0, 2)) || !slices.Equal(peers.sentTo(2), tps(1)) || len(peers.sentTo(1)) != 0 {
			t.Fatalf("sent locally %v, to broker 2 %v, to broker 1 through peers %v", got, peers.sentTo(2), peers.sentTo(1))
		}
	})
}

// TestRetriesUntilWritten: retriable answers and a failed send are
// retried after a backoff, a moved leader is asked at its new place, and
// done waits for the last partition.
func TestRetriesUntilWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cache := cacheWith(2, 3)
		peers := newFakeLeaders()
		peers.down[3] = 2
		peers.answer = func(broker int32, tp txn.TopicPartition, attempt int) int16 {
			if tp.Partition == 0 && broker == 2 {
				return kerr.NotLeaderForPartition.Code
			}
			return 0
		}
		w := New(Config{NodeID: 1, Cache: cache, Peers: peers})
		defer w.Close()
		doneCh := make(chan struct{})
		w.WriteMarkers(markersFor(0, 1), func() { close(doneCh) })
		synctest.Wait()
		// t-0 keeps answering NOT_LEADER_OR_FOLLOWER from broker 2
		// until the metadata moves it to broker 4.
		time.Sleep(time.Second)
		select {
		case <-doneCh:
			t.Fatal("done while t-0 has no marker")
		default:
		}
		chs := partitionChanges(4, 3)
		cache.Apply(2, chs[1:2])
		select {
		case <-doneCh:
		case <-time.After(time.Minute):
			t.Fatal("done not called after the leader moved")
		}
		if len(peers.sentTo(4)) != 1 || len(peers.sentTo(3)) != 1 {
			t.Fatalf("sent to broker 4 %v, to broker 3 %v; want one marker each", peers.sentTo(4), peers.sentTo(3))
		}
		if len(peers.sentTo(2)) < 2 {
			t.Fatalf("sent to broker 2 %d times, want retries", len(peers.sentTo(2)))
		}
	})
}

// TestDropsFencedWork: a fenced answer or a stale coordinator epoch drops
// the work without calling done.
func TestDropsFencedWork(t *testing.T) {
	for name, c := range map[string]struct {
		code    int16
		current bool
	}{
		"coordinator fenced": {kerr.TransactionCoordinatorFenced.Code, true},
		"producer fenced":    {kerr.InvalidProducerEpoch.Code, true},
		"stale epoch":        {0, false},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				peers := newFakeLeaders()
				peers.answer = func(int32, txn.TopicPartition, int) int16 { return c.code }
				w := New(Config{NodeID: 1, Cache: cacheWith(2), Peers: peers,
					Current: func(txn.Markers) bool { return c.current }})
				if run(t, w, markersFor(0)) {
					t.Fatal("done called for dropped work")
				}
				w.Close() // returns: the write ended
				if want := map[bool]int{true: 1, false: 0}[c.current]; len(peers.sentTo(2)) != want {
					t.Fatalf("sent %v, want %d markers", peers.sentTo(2), want)
				}
			})
		})
	}
}

// TestDeletedPartitionNeedsNoMarker: a partition no longer in the
// metadata counts as written.
func TestDeletedPartitionNeedsNoMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		peers := newFakeLeaders()
		w := New(Config{NodeID: 1, Cache: cacheWith(2), Peers: peers})
		defer w.Close()
		m := markersFor(0, 5)
		m.Partitions = append(m.Partitions, txn.TopicPartition{Topic: "gone", Partition: 0})
		if !run(t, w, m) {
			t.Fatal("done not called")
		}
		if !slices.Equal(peers.sentTo(2), tps(0)) {
			t.Fatalf("sent %v, want t-0 only", peers.sentTo(2))
		}
	})
}

// TestCloseStopsRetries: Close ends a write that keeps being retried,
// without done.
func TestCloseStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		peers := newFakeLeaders()
		peers.answer = func(int32, txn.TopicPartition, int) int16 { return kerr.RequestTimedOut.Code }
		w := New(Config{NodeID: 1, Cache: cacheWith(2), Peers: peers})
		if run(t, w, markersFor(0)) {
			t.Fatal("done called while timing out")
		}
		time.Sleep(10 * time.Second)
		w.Close()
		if n := len(peers.sentTo(2)); n < 3 {
			t.Fatalf("%d sends in 10s of retries, want several", n)
		}
	})
}
