package txnmarkers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/metadata"
)

// Sender sends a request, its version set, to broker id and returns the
// response (broker/peer.Client).
type Sender interface {
	Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error)
}

// Config is what a Writer needs.
type Config struct {
	// NodeID is this broker's id: markers for partitions it leads go to
	// Local.
	NodeID int32
	// Cache tells each partition's current leader.
	Cache *metadata.Cache
	// Peers sends to other brokers.
	Peers Sender
	// Local serves requests on this broker in process; nil: through Peers.
	Local Sender
	// Current reports whether m's coordinator epoch is still the current
	// one of its coordinator (Kafka's coordinator epoch check before each
	// send); nil: always.
	Current func(m txn.Markers) bool
	// RetryBackoff is the first wait before a retry, doubled up to
	// maxBackoff; zero: Kafka's retry.backoff.ms default, 100 ms.
	RetryBackoff time.Duration
	Log          *slog.Logger
}

// maxBackoff caps the wait between retries.
const maxBackoff = 2 * time.Second

// requestVersion is the WriteTxnMarkers version sent: v1, the flexible
// one every Strata broker serves.
const requestVersion = 1

// Writer is a txn.MarkerWriter sending WriteTxnMarkers to the partitions'
// leaders.
type Writer struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Writer; Close stops it.
func New(cfg Config) *Writer {
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 100 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Writer{cfg: cfg, ctx: ctx, cancel: cancel}
}

var _ txn.MarkerWriter = (*Writer)(nil)

// WriteMarkers starts writing m's markers and returns at once; done is
// called once every partition has its marker (see the package doc).
func (w *Writer) WriteMarkers(m txn.Markers, done func()) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if w.write(m) {
			done()
		}
	}()
}

// Close stops every write in progress (their done is not called) and
// waits for their goroutines.
func (w *Writer) Close() {
	w.cancel()
	w.wg.Wait()
}

// outcome is what a leader's answer means for one partition.
type outcome int

const (
	written outcome = iota // the marker is written, or not needed
	retry                  // ask again, the leader maybe changed
	fenced                 // producer or coordinator fenced: drop the work
)

// write writes m's markers until every partition has its marker (true),
// or the work is dropped or the writer closed (false).
func (w *Writer) write(m txn.Markers) bool {
	pending := make(map[txn.TopicPartition]bool, len(m.Partitions))
	for _, tp := range m.Partitions {
		pending[tp] = true
	}
	backoff := w.cfg.RetryBackoff
	for {
		if w.cfg.Current != nil && !w.cfg.Current(m) {
			w.cfg.Log.Info("transaction markers dropped: coordinator epoch is stale",
				"transactional_id", m.TransactionalID, "coordinator_epoch", m.CoordinatorEpoch)
			return false
		}
		results := w.attempt(m, pending)
		for tp, o := range results {
			switch o {
			case written:
				delete(pending, tp)
			case fenced:
				return false
			}
		}
		if len(pending) == 0 {
			return true
		}
		select {
		case <-w.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// attempt sends the pending partitions' markers to their leaders, in
// parallel, and returns each partition's outcome. Partitions without a
// leader right now are retried.
func (w *Writer) attempt(m txn.Markers, pending map[txn.TopicPartition]bool) map[txn.TopicPartition]outcome {
	out := make(map[txn.TopicPartition]outcome, len(pending))
	byLeader := map[int32][]txn.TopicPartition{}
	for tp := range pending {
		t, ok := w.cfg.Cache.Topic(tp.Topic)
		st, exists := t.Partitions[tp.Partition]
		switch {
		case !ok || !exists:
			// Deleted: no marker needed (Kafka's
			// addTxnMarkersToBrokerQueue drops it too).
			out[tp] = written
		case st.Leader < 0:
			out[tp] = retry
		default:
			byLeader[st.Leader] = append(byLeader[st.Leader], tp)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for leader, tps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := w.send(m, leader, tps)
			mu.Lock()
			defer mu.Unlock()
			for tp, o := range res {
				out[tp] = o
			}
		}()
	}
	wg.Wait()
	return out
}

// send asks leader to write m's markers to tps and returns each
// partition's outcome.
func (w *Writer) send(m txn.Markers, leader int32, tps []txn.TopicPartition) map[txn.TopicPartition]outcome {
	out := make(map[txn.TopicPartition]outcome, len(tps))
	for _, tp := range tps {
		out[tp] = retry // unless answered below
	}
	to := w.cfg.Peers
	if leader == w.cfg.NodeID && w.cfg.Local != nil {
		to = w.cfg.Local
	}
	resp, err := to.Request(w.ctx, leader, request(m, tps))
	if err != nil {
		w.cfg.Log.Info("send transaction markers", "transactional_id", m.TransactionalID, "broker", leader, "err", err)
		return out
	}
	r, ok := resp.(*kmsg.WriteTxnMarkersResponse)
	if !ok {
		w.cfg.Log.Error("send transaction markers: unexpected response", "broker", leader, "response", resp)
		return out
	}
	for _, rm := range r.Markers {
		if rm.ProducerID != m.ProducerID {
			continue
		}
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				if _, asked := out[tp]; asked {
					out[tp] = w.outcome(m, tp, leader, rp.ErrorCode)
				}
			}
		}
	}
	return out
}

// outcome classifies a partition's answer as Kafka's
// TransactionMarkerRequestCompletionHandler does.
func (w *Writer) outcome(m txn.Markers, tp txn.TopicPartition, leader int32, code int16) outcome {
	switch code {
	case 0:
		return written
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code, kerr.KafkaStorageError.Code:
		w.cfg.Log.Debug("transaction marker to retry", "transactional_id", m.TransactionalID,
			"topic", tp.Topic, "partition", tp.Partition, "broker", leader, "err", kerr.ErrorForCode(code))
		return retry
	case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
		w.cfg.Log.Info("transaction markers dropped: fenced", "transactional_id", m.TransactionalID,
			"topic", tp.Topic, "partition", tp.Partition, "err", kerr.ErrorForCode(code))
		return fenced
	case kerr.UnsupportedForMessageFormat.Code, kerr.UnsupportedVersion.Code:
		// The producer could not have written there either: no marker
		// is needed.
		return written
	default:
		// Kafka treats these as a bug (IllegalStateException); retrying
		// keeps the transaction pending, and visible, rather than
		// completing it without its marker.
		w.cfg.Log.Error("transaction marker refused", "transactional_id", m.TransactionalID,
			"topic", tp.Topic, "partition", tp.Partition, "broker", leader, "err", kerr.ErrorForCode(code))
		return retry
	}
}

// request is the WriteTxnMarkers of m for partitions tps.
func request(m txn.Markers, tps []txn.TopicPartition) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(requestVersion)
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	topics, parts := txn.ByTopic(tps)
	for i, t := range topics {
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = t, parts[i]
		rm.Topics = append(rm.Topics, rt)
	}
	req.Markers = append(req.Markers, rm)
	return req
}
