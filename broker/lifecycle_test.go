package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/strata-broker/strata/config"
)

// runTimeout bounds every wait on a broker in these tests.
const runTimeout = 60 * time.Second

// testConfig is a single broker on loopback port 0 with embedded etcd, a
// metrics listener and tiering to a local directory (so every part
// starts), with overrides applied.
func testConfig(t *testing.T, dir string, overrides map[string]string) *config.Broker {
	t.Helper()
	m := map[string]string{
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                         dir,
		"metadata.etcd.endpoints":          "",
		"metrics.listener":                 "127.0.0.1:0",
		"console.listener":                 "127.0.0.1:0",
		"remote.log.storage.system.enable": "true",
		"remote.log.storage.backend":       "local",
		"remote.log.storage.local.dir":     filepath.Join(dir, "tier-store"),
		"broker.session.timeout.ms":        "3000",
		"offsets.topic.num.partitions":     "1",
		"group.initial.rebalance.delay.ms": "0",
	}
	for k, v := range overrides {
		m[k] = v
	}
	cfg, err := config.Parse(m)
	if err != nil {
		t.Fatalf("parse config: %v", err)
	}
	return cfg
}

// leakCheck records the goroutines and open file descriptors at its call;
// its result, called right after Run returned, fails the test if Run left
// any behind. Goroutines of Strata's own code must be gone at once (Run
// joins them); goleak then gives those of libraries (etcd's and gRPC's
// clients end some asynchronously after Close) its usual retries.
func leakCheck(t *testing.T) func() {
	t.Helper()
	warmNetpoll(t)
	ignore := goleak.IgnoreCurrent()
	before := openFDs(t)
	ours := strataGoroutines()
	return func() {
		t.Helper()
		// A goroutine whose end was awaited through a channel it closes in
		// a defer is still exiting when the wait returns; like goleak,
		// give such goroutines a bounded time to finish.
		var left []string
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			left = left[:0]
			for id, g := range strataGoroutines() {
				if _, ok := ours[id]; !ok {
					left = append(left, g)
				}
			}
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
		}
		for _, g := range left {
			t.Errorf("goroutine still running when Run returned:\n%s", g)
		}
		goleak.VerifyNone(t, ignore)
		if after := openFDs(t); len(after) != len(before) {
			t.Errorf("open file descriptors: %d before Run, %d after:\n%s", len(before), len(after), fdDiff(before, after))
		}
	}
}

// strataGoroutines are the running goroutines with a frame of Strata's
// code other than this test's, by goroutine header.
func strataGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		id, _, _ := strings.Cut(strings.TrimPrefix(header, "goroutine "), " ")
		if strings.Contains(g, "strata-broker/strata/") && !strings.Contains(g, "_test.go") {
			out[id] = g
		}
	}
	return out
}

// warmNetpoll makes the runtime open its network poller's descriptors
// (epoll and its wake-up fd), which it does once, on first use, and keeps.
func warmNetpoll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
}

// openFDs maps this process's open descriptors to what they point at.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	out := map[string]string{}
	for _, e := range entries {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		out[e.Name()] = target
	}
	return out
}

func fdDiff(before, after map[string]string) string {
	var b strings.Builder
	for fd, target := range after {
		if before[fd] != target {
			b.WriteString("  new " + fd + " -> " + target + "\n")
		}
	}
	return b.String()
}

// quietLog drops the broker's logs unless the test fails verbosely.
func quietLog(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// started is a broker running in the background.
type startedServer struct {
	s      *Server
	cancel context.CancelFunc
	done   chan error
}

// startServer runs a broker until it is ready.
func startServer(t *testing.T, cfg *config.Broker) *startedServer {
	t.Helper()
	return startServerLogging(t, cfg, quietLog(t))
}

// startServerLogging runs a broker that logs to log until it is ready.
func startServerLogging(t *testing.T, cfg *config.Broker, log *slog.Logger) *startedServer {
	t.Helper()
	s, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &startedServer{s: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-r.done:
		cancel()
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(runTimeout):
		cancel()
		t.Fatal("broker not ready")
	}
	return r
}

// wait returns Run's result.
func (r *startedServer) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(runTimeout):
		t.Fatal("Run did not return")
		return nil
	}
}

// runToError runs a broker that must fail to start and returns its error.
func runToError(t *testing.T, ctx context.Context, s *Server) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case err := <-done:
		select {
		case <-s.Ready():
			t.Error("Ready closed although start-up failed")
		default:
		}
		return err
	case <-s.Ready():
		t.Fatal("broker started")
	case <-time.After(runTimeout):
		t.Fatal("Run did not return")
	}
	return nil
}

// takenPort is a loopback address some other listener holds.
func takenPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// TestStartFailureLeavesNothing: a start-up step that fails for real
// (listener addresses taken, the log dir locked by another holder, etcd
// unable to start or out of reach) makes Run return an error naming the
// step, with no goroutine left running and no file left open.
func TestStartFailureLeavesNothing(t *testing.T) {
	cases := []struct {
		name  string
		step  string
		setup func(t *testing.T, dir string) (map[string]string, context.Context)
	}{
		{"kafka port taken", "kafka listener", func(t *testing.T, dir string) (map[string]string, context.Context) {
			return map[string]string{"listeners": "PLAINTEXT://" + takenPort(t)}, context.Background()
		}},
		{"metrics port taken", "metrics listener", func(t *testing.T, dir string) (map[string]string, context.Context) {
			return map[string]string{"metrics.listener": takenPort(t)}, context.Background()
		}},
		{"kafka address not local", "kafka listener", func(t *testing.T, dir string) (map[string]string, context.Context) {
			// 192.0.2.1 (TEST-NET-1) is no address of this host: bind fails.
			return map[string]string{"listeners": "PLAINTEXT://192.0.2.1:0"}, context.Background()
		}},
		{"log dir locked", "log dir", func(t *testing.T, dir string) (map[string]string, context.Context) {
			// flock conflicts between open file descriptions, so a second
			// open in this process stands for another broker process.
			ld, err := openLogDir(dir, 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ld.close() })
			return nil, context.Background()
		}},
		{"etcd data dir unusable", "embedded etcd", func(t *testing.T, dir string) (map[string]string, context.Context) {
			if err := os.WriteFile(filepath.Join(dir, "etcd"), []byte("not a directory"), 0o644); err != nil {
				t.Fatal(err)
			}
			return nil, context.Background()
		}},
		{"external etcd unreachable", "metadata store", func(t *testing.T, dir string) (map[string]string, context.Context) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close() // nothing listens there now
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			t.Cleanup(cancel)
			return map[string]string{"metadata.etcd.endpoints": "http://" + addr}, ctx
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			overrides, ctx := tc.setup(t, dir)
			check := leakCheck(t)
			s, err := New(testConfig(t, dir, overrides), quietLog(t))
			if err != nil {
				t.Fatal(err)
			}
			err = runToError(t, ctx, s)
			if err == nil || !strings.Contains(err.Error(), "start "+tc.step+":") {
				t.Fatalf("Run: %v, want a failure of step %q", err, tc.step)
			}
			t.Logf("Run: %v", err)
			check()
		})
	}
}

// TestEachStartStepFailureLeavesNothing fails every start-up step in turn
// (through the test hook, after the steps before it really started) and
// checks that Run names it and leaves no goroutine and no open file.
func TestEachStartStepFailureLeavesNothing(t *testing.T) {
	errInjected := errors.New("injected start failure")
	for _, c := range (&Server{}).components(newNode()) {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			check := leakCheck(t)
			s, err := New(testConfig(t, t.TempDir(), nil), quietLog(t))
			if err != nil {
				t.Fatal(err)
			}
			s.beforeStart = func(step string) error {
				if step == c.name {
					return errInjected
				}
				return nil
			}
			err = runToError(t, context.Background(), s)
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "start "+c.name+":") {
				t.Fatalf("Run: %v, want the injected failure of step %q", err, c.name)
			}
			check()
		})
	}
}

// TestStartStopLeavesNothing: a broker that started, served a producer,
// a group consumer and a metrics scrape, and was asked to stop returns nil and
// leaves no goroutine and no open file; its logs are closed cleanly.
func TestStartStopLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	check := leakCheck(t)
	r := startServer(t, testConfig(t, dir, nil))
	produceOne(t, r.s.Addr(), "lifecycle", 0)
	scrape(t, r.s.node.metricsLn.Addr().String())
	r.cancel()
	if err := r.wait(t); err != nil {
		t.Fatalf("Run after a clean stop: %v", err)
	}
	check()
	if _, err := os.Stat(filepath.Join(dir, "lifecycle-0")); err != nil {
		t.Fatalf("partition directory: %v", err)
	}
}

// TestStopDuringEtcdOutage: when etcd goes away under the broker it
// keeps serving from its cached metadata, beyond its lease's TTL (reads,
// and writes to the partitions it leads), and a stop asked meanwhile
// still goes through the ordered stop in bounded time, returns nil and
// leaves nothing behind.
func TestStopDuringEtcdOutage(t *testing.T) {
	check := leakCheck(t)
	r := startServer(t, testConfig(t, t.TempDir(), nil))
	produceOne(t, r.s.Addr(), "outage", 0)
	r.s.node.closeEtcd()
	ttl := time.Duration(r.s.cfg.BrokerSessionTimeoutMs) * time.Millisecond
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.s.Addr()), kgo.DefaultProduceTopic("outage"), kgo.ConsumeTopics("outage"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	// Produce and consume for longer than the lease lives.
	produced, consumed := 1, 0
	for end := time.Now().Add(ttl + time.Second); time.Now().Before(end); {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("during"), Partition: 0}).FirstErr(); err != nil {
			t.Fatalf("produce %d during the outage: %v", produced, err)
		}
		produced++
		for consumed < produced {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consume during the outage: %d of %d records: %v", consumed, produced, err)
			}
			consumed += fs.NumRecords()
		}
	}
	t.Logf("%d records produced and consumed during the outage", produced)
	cl.Close()
	r.cancel()
	if err := r.wait(t); err != nil {
		t.Fatalf("Run after a stop during the outage: %v", err)
	}
	check()
}

// TestAcceptFailureStopsInOrder: a Kafka listener that fails under the
// broker stops it through the ordered stop, and Run reports it.
func TestAcceptFailureStopsInOrder(t *testing.T) {
	check := leakCheck(t)
	r := startServer(t, testConfig(t, t.TempDir(), nil))
	_ = r.s.node.kafkaLns[0].ln.Close()
	err := r.wait(t)
	if err == nil || !strings.Contains(err.Error(), "kafka server: accept") {
		t.Fatalf("Run: %v, want the accept failure", err)
	}
	check()
}

// TestPartitionThatCannotOpenStaysOffline: a broker that cannot open one
// of its partitions at start-up serves the others, counts the failure and
// reports the replica offline; the broken partition's data is not removed
// as stray.
func TestPartitionThatCannotOpenStaysOffline(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, map[string]string{"num.partitions": "2"})
	r := startServer(t, cfg)
	produceOne(t, r.s.Addr(), "two", 1)
	r.cancel()
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}
	// Partition 0's directory becomes a file: its log cannot open.
	p0 := filepath.Join(dir, "two-0")
	if err := os.Rename(p0, p0+".saved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p0, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	r = startServer(t, testConfig(t, dir, map[string]string{"num.partitions": "2"}))
	defer func() {
		r.cancel()
		if err := r.wait(t); err != nil {
			t.Error(err)
		}
	}()
	n := r.s.node
	if _, ok := n.parts.Get("two", 1); !ok {
		t.Fatal("partition 1 not served")
	}
	if _, ok := n.parts.Get("two", 0); ok {
		t.Fatal("partition 0 served although its log cannot open")
	}
	if got := gauge(t, n, "strata_partition_open_errors_total"); got != 1 {
		t.Errorf("strata_partition_open_errors_total = %v, want 1", got)
	}
	if got := gauge(t, n, "strata_offline_replicas"); got != 1 {
		t.Errorf("strata_offline_replicas = %v, want 1", got)
	}
	if _, err := os.Stat(p0 + ".saved"); err != nil {
		t.Errorf("saved partition data: %v", err)
	}
}

// gauge is the value of an unlabelled metric of n.
func gauge(t *testing.T, n *node, name string) float64 {
	t.Helper()
	mfs, err := n.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) != 1 {
			continue
		}
		m := mf.GetMetric()[0]
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// produceOne produces a record to partition p of topic (created on first
// use) and reads it back in a consumer group (so the group coordinator
// loads its partition).
func produceOne(t *testing.T, addr, topic string, p int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ConsumerGroup("g-"+topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v"), Partition: p}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		if fs.NumRecords() > 0 {
			return
		}
	}
}

// scrape reads /metrics once.
func scrape(t *testing.T, addr string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: runTimeout}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "strata_offline_replicas") {
		t.Fatalf("scrape: %s\n%s", resp.Status, b)
	}
}

// TestDocListsComponentOrder: the start order written in doc.go is the
// order of the component list.
func TestDocListsComponentOrder(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "start ↓")
	if !ok {
		t.Fatal("doc.go has no start order table")
	}
	table, _, _ = strings.Cut(table, "\n//\n")
	var doc []string
	for _, line := range strings.Split(table, "\n")[1:] {
		name, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "//")), "  ")
		doc = append(doc, name)
	}
	var list []string
	for _, c := range (&Server{}).components(newNode()) {
		list = append(list, c.name)
	}
	if !slices.Equal(doc, list) {
		t.Fatalf("doc.go order:\n%q\ncomponents:\n%q", doc, list)
	}
}
