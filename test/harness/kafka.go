package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OpTimeout bounds each helper operation against a broker.
const OpTimeout = 30 * time.Second

// NewClient returns a franz-go client seeded with addr and closed when the
// test ends. Set STRATA_KGO_LOG=debug|info|warn to see the client's log.
func NewClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(addr), kgo.FetchMaxWait(500 * time.Millisecond)}
	if lvl := kgoLogLevel(); lvl != kgo.LogLevelNone {
		base = append(base, kgo.WithLogger(kgo.BasicLogger(os.Stderr, lvl, nil)))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("harness: new kgo client for %s: %v", addr, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func kgoLogLevel() kgo.LogLevel {
	switch os.Getenv("STRATA_KGO_LOG") {
	case "debug":
		return kgo.LogLevelDebug
	case "info":
		return kgo.LogLevelInfo
	case "warn":
		return kgo.LogLevelWarn
	}
	return kgo.LogLevelNone
}

// NewAdmin returns a kadm client over a new client for addr.
func NewAdmin(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(NewClient(t, addr))
}

// CreateTopic creates topic with the given partition count and topic
// configs (replication factor 1) and returns its topic ID.
func CreateTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]string) kadm.TopicID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	var cfg map[string]*string
	if len(configs) > 0 {
		cfg = make(map[string]*string, len(configs))
		for k, v := range configs {
			cfg[k] = kadm.StringPtr(v)
		}
	}
	resp, err := adm.CreateTopic(ctx, partitions, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("harness: create topic %s (%d partitions, configs %v): %v %s", topic, partitions, configs, err, resp.ErrMessage)
	}
	return resp.ID
}

// ReadAll reads topic from each partition's log start offset up to its
// high watermark at the time of the call and returns the records by
// partition (read_uncommitted: aborted transactions' records too), failing the test if they cannot all be read
// within OpTimeout. opts go to its client (kgo.DialTLSConfig for an SSL
// listener).
//
// It fetches each partition from its leader with raw Fetch requests and
// follows the fetch position, not the records: a partition is read once
// the position reaches the high watermark, even if its last entries are
// transaction markers (control batches, never returned as records) or
// batches whose records were all compacted away.
func ReadAll(t testing.TB, addr, topic string, opts ...kgo.Opt) map[int32][]*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	cl := NewClient(t, addr, opts...)
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		t.Fatalf("harness: list start offsets of %s: %v", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("harness: list end offsets of %s: %v", topic, err)
	}
	out := make(map[int32][]*kgo.Record)
	pos := make(map[int32]int64)  // partition -> next offset to fetch
	want := make(map[int32]int64) // partition -> high watermark
	ends.Each(func(e kadm.ListedOffset) {
		s, _ := starts.Lookup(topic, e.Partition)
		out[e.Partition] = nil
		if e.Offset > s.Offset {
			want[e.Partition] = e.Offset
			pos[e.Partition] = s.Offset
		}
	})
	r := &partitionReader{cl: cl, adm: adm, topic: topic}
	for p, hw := range want {
		for pos[p] < hw {
			recs, next, err := r.fetch(ctx, p, pos[p])
			if ctx.Err() != nil {
				t.Fatalf("harness: read %s/%d: timed out at offset %d of high watermark %d (last error: %v)", topic, p, pos[p], hw, err)
			}
			if errors.Is(err, kerr.OffsetOutOfRange) {
				// Retention moved the log start past the position since
				// it was listed: go on from the new start, as a consumer
				// resetting to the earliest offset does.
				if start := logStart(ctx, adm, topic, p); start > pos[p] {
					pos[p] = start
					continue
				}
			}
			var ke *kerr.Error
			if errors.As(err, &ke) && !ke.Retriable {
				t.Fatalf("harness: read %s/%d at offset %d: %v", topic, p, pos[p], err)
			}
			for _, rec := range recs {
				if rec.Offset < hw {
					out[p] = append(out[p], rec)
				}
			}
			pos[p] = next
		}
	}
	return out
}

// logStart is partition p's log start offset, or -1 if it cannot be
// listed.
func logStart(ctx context.Context, adm *kadm.Client, topic string, p int32) int64 {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return -1
	}
	s, ok := starts.Lookup(topic, p)
	if !ok || s.Err != nil {
		return -1
	}
	return s.Offset
}

// partitionReader fetches one topic's partitions from their leaders with
// raw Fetch requests, looking the leaders up again after an error.
type partitionReader struct {
	cl    *kgo.Client
	adm   *kadm.Client
	topic string
	md    *kadm.TopicDetail // nil until looked up, and after an error
}

// fetch sends one Fetch of partition p at offset to its leader and returns
// the records and the next offset to fetch, past any control batch. After
// an error (retriable if the leader moved, or a connection error) the
// offset is unchanged.
func (r *partitionReader) fetch(ctx context.Context, p int32, offset int64) (recs []*kgo.Record, next int64, err error) {
	defer func() {
		if err != nil {
			r.md = nil
		}
	}()
	if r.md == nil {
		md, err := r.adm.Metadata(ctx, r.topic)
		if err != nil {
			return nil, offset, fmt.Errorf("metadata: %w", err)
		}
		td := md.Topics[r.topic]
		if td.Err != nil {
			return nil, offset, fmt.Errorf("metadata: %w", td.Err)
		}
		r.md = &td
	}
	pd, ok := r.md.Partitions[p]
	switch {
	case !ok:
		return nil, offset, fmt.Errorf("metadata lists no partition %d: %w", p, kerr.UnknownTopicOrPartition)
	case pd.Err != nil:
		return nil, offset, fmt.Errorf("metadata of partition %d: %w", p, pd.Err)
	case pd.Leader < 0:
		return nil, offset, kerr.LeaderNotAvailable
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 500
	req.MinBytes = 1
	req.MaxBytes = 8 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = r.topic
	rt.TopicID = r.md.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = p
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 4 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := r.cl.Broker(int(pd.Leader)).Request(ctx, req)
	if err != nil {
		return nil, offset, fmt.Errorf("fetch from broker %d: %w", pd.Leader, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, offset, fmt.Errorf("fetch from broker %d: %w", pd.Leader, err)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			fp := &resp.Topics[i].Partitions[j]
			if fp.Partition != p {
				continue
			}
			got, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Offset: offset, IsolationLevel: kgo.ReadUncommitted(), Topic: r.topic, Partition: p,
			}, fp, kgo.DefaultDecompressor(), nil)
			if got.Err != nil {
				return nil, offset, fmt.Errorf("fetch from broker %d: %w", pd.Leader, got.Err)
			}
			return got.Records, next, nil
		}
	}
	return nil, offset, fmt.Errorf("fetch from broker %d: no partition %d in the response", pd.Leader, p)
}

// Ping checks that addr accepts a TCP connection and answers ApiVersions
// and a Metadata request listing at least one broker.
func Ping(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	conn.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		return fmt.Errorf("client for %s: %w", addr, err)
	}
	defer cl.Close()
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("api versions from %s: %w", addr, err)
	}
	if av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
		return fmt.Errorf("api versions from %s: error code %d, %d keys", addr, av.ErrorCode, len(av.ApiKeys))
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("metadata from %s: %w", addr, err)
	}
	if len(md.Brokers) == 0 {
		return errors.New("metadata lists no brokers")
	}
	return nil
}

// waitReady polls Ping until it succeeds, exited is closed (the broker
// process died) or timeout passes.
func waitReady(addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last = Ping(ctx, addr)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("broker exited before it was ready (last probe: %v)", last)
		case <-tick.C:
		}
	}
	return fmt.Errorf("broker at %s not ready after %v: %w", addr, timeout, last)
}
