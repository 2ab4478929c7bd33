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

// ReadAll consumes topic from each partition's log start offset up to its
// high watermark at the time of the call and returns the records by
// partition, failing the test if they cannot all be read within OpTimeout.
// opts go to its clients (kgo.DialTLSConfig for an SSL listener).
func ReadAll(t testing.TB, addr, topic string, opts ...kgo.Opt) map[int32][]*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	adm := kadm.NewClient(NewClient(t, addr, opts...))
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
	want := make(map[int32]int64) // partition -> high watermark
	offsets := make(map[int32]kgo.Offset)
	ends.Each(func(e kadm.ListedOffset) {
		s, _ := starts.Lookup(topic, e.Partition)
		out[e.Partition] = nil
		if e.Offset > s.Offset {
			want[e.Partition] = e.Offset
			offsets[e.Partition] = kgo.NewOffset().At(s.Offset)
		}
	})
	if len(offsets) == 0 {
		return out
	}
	cl := NewClient(t, addr, append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))...)
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("harness: read %s: timed out with partitions %v still short of their high watermarks (got %d records so far)", topic, want, countRecords(out))
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("harness: read %s/%d: %v", topic, p, err)
		})
		if t.Failed() {
			t.FailNow()
		}
		fs.EachRecord(func(r *kgo.Record) {
			hw, ok := want[r.Partition]
			if !ok || r.Offset >= hw {
				return
			}
			out[r.Partition] = append(out[r.Partition], r)
			if r.Offset == hw-1 {
				delete(want, r.Partition)
			}
		})
	}
	return out
}

func countRecords(m map[int32][]*kgo.Record) int {
	n := 0
	for _, rs := range m {
		n += len(rs)
	}
	return n
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
