package e2e

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestOpenFileLimit runs the broker binary under a low open-file limit
// (prlimit): topics are accepted up to the partition limit its descriptors
// leave room for and refused beyond it (POLICY_VIOLATION naming the
// limit), and the broker lives on; it reads many more sealed segments than
// it keeps open; it restarts and serves everything again. Restarted under
// a lower limit it serves the partitions that fit and reports the others
// offline instead of running out of files, and under the first limit
// again it serves them all, their data intact.
func TestOpenFileLimit(t *testing.T) {
	under := func(n int) []string { return harness.UnderFileLimit(t, n) }
	metrics := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	// 1024 files: a quarter for connections and etcd, a quarter for sealed
	// segments' files, two a partition for the rest: 256 partitions.
	// The logs live on tmpfs where there is one: the test is about
	// descriptors, and a disk's fsyncs at each of its thousands of rolls
	// would make it wait on I/O most of its time.
	dir := t.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "strata-fdlimit-"); err == nil {
		t.Cleanup(func() { _ = os.RemoveAll(shm) })
		dir = shm
	}
	p := harness.StartProcessUnder(t, under(1024), map[string]string{"metrics.listener": metrics, "log.segment.bytes": "1024", "log.dirs": dir})
	adm := harness.NewAdmin(t, p.Addr())
	topics := map[string]int32{"fd-0": 50, "fd-1": 50, "fd-2": 50, "fd-3": 50, "fd-4": 50}
	for name, n := range topics {
		harness.CreateTopic(t, adm, name, n, nil)
	}
	wantRefused(t, adm, "fd-over", 50, "broker 1 would host 300 partition replicas (250 now, 50 more); its limit is 256")
	topics["fd-5"] = 6
	harness.CreateTopic(t, adm, "fd-5", 6, nil)
	wantRefused(t, adm, "fd-over", 1, "its limit is 256")

	// Rounds of one batch per partition roll every partition's 1 KiB
	// segments, leaving about a thousand sealed ones: four times what the
	// broker keeps open.
	cl := harness.NewClient(t, p.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	want := map[string]map[int32][]*kgo.Record{}
	value := strings.Repeat("v", 300)
	for round := range 12 {
		var recs []*kgo.Record
		for name, n := range topics {
			if want[name] == nil {
				want[name] = map[int32][]*kgo.Record{}
			}
			for part := range n {
				r := &kgo.Record{Topic: name, Partition: part, Value: fmt.Appendf(nil, "%s-%d-%d-%s", name, part, round, value)}
				want[name][part] = append(want[name][part], r)
				recs = append(recs, r)
			}
		}
		produceSync(t, cl, recs...)
	}
	readEverything := func(what string) {
		t.Helper()
		for name, parts := range want {
			got := harness.ReadAll(t, p.Addr(), name)
			for part, recs := range parts {
				checkPartition(t, name, part, recs, got[part])
			}
		}
		if t.Failed() {
			t.Fatalf("%s: records differ", what)
		}
		m := scrape(t, metrics)
		if m["strata_segment_open_files"] > 256 || m["strata_partitions"] != 256 || m["strata_offline_replicas"] != 0 {
			t.Fatalf("%s: metrics %v", what, m)
		}
		// Active segments, the segment file cache and the reserve.
		if n := openFiles(t, p.Pid()); n > 3*256 {
			t.Fatalf("%s: the broker has %d files open", what, n)
		}
	}
	readEverything("first start")
	if n := sumSeries(scrape(t, metrics), "strata_log_segments"); n < 4*256 {
		t.Fatalf("only %v segments", n)
	}

	p.Restart()
	readEverything("after a restart")

	// 512 files leave room for 128 partitions: the broker serves the
	// first 128 (by topic name) and reports the other 128 offline.
	p.SetWrapper(under(512)...)
	p.Restart()
	m := scrape(t, metrics)
	if m["strata_partitions"] != 128 || m["strata_offline_replicas"] != 128 || m["strata_partition_open_errors_total"] != 128 || m["strata_partitions_max"] != 128 {
		t.Fatalf("under 512 files: metrics %v", m)
	}
	adm = harness.NewAdmin(t, p.Addr())
	wantRefused(t, adm, "fd-over", 1, "its limit is 128")
	got := harness.ReadAll(t, p.Addr(), "fd-0")
	for part, recs := range want["fd-0"] {
		checkPartition(t, "fd-0", part, recs, got[part])
	}
	more := &kgo.Record{Topic: "fd-0", Partition: 0, Value: []byte("under 512")}
	produceSync(t, harness.NewClient(t, p.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner())), more)
	want["fd-0"][0] = append(want["fd-0"][0], more)

	p.SetWrapper(under(1024)...)
	p.Restart()
	readEverything("back under 1024 files")
}

// wantRefused checks that creating topic with n partitions is refused
// with POLICY_VIOLATION and a message containing says.
func wantRefused(t *testing.T, adm *kadm.Client, topic string, n int32, says string) {
	t.Helper()
	resp, err := adm.CreateTopic(testCtx(t), n, 1, nil, topic)
	if err != nil && !errors.Is(err, kerr.PolicyViolation) {
		t.Fatal(err)
	}
	if !errors.Is(resp.Err, kerr.PolicyViolation) || !strings.Contains(resp.ErrMessage, says) {
		t.Fatalf("create %s (%d partitions): %v %q, want POLICY_VIOLATION saying %q", topic, n, resp.Err, resp.ErrMessage, says)
	}
}

// sumSeries is the sum of every series of metric name in m (scrape).
func sumSeries(m map[string]float64, name string) float64 {
	sum := 0.0
	for series, v := range m {
		if series == name || strings.HasPrefix(series, name+"{") {
			sum += v
		}
	}
	return sum
}

// openFiles counts the open descriptors of process pid.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("count open files of pid %d: %v", pid, err)
	}
	return len(entries)
}
