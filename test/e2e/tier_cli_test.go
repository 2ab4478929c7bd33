package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/minio"
	"github.com/strata-broker/strata/tier/objstore/backend"
)

// tierStatus runs `strata tier status --json` against one broker.
func tierStatus(t *testing.T, admin, topic string) broker.TierStatus {
	t.Helper()
	out, errOut, code := strataCLI(t, "tier", "status", "--admin", admin, "--topic", topic, "--json")
	var all []broker.TierStatus
	if code != 0 || json.Unmarshal([]byte(out), &all) != nil || len(all) != 1 {
		t.Fatalf("tier status: exit %d, %q, stderr %q", code, out, errOut)
	}
	return all[0]
}

// waitAllTiered waits until every sealed segment of the topic is tiered
// and gone from the disk of the broker at admin (only the active segments
// are local), so the bucket holds offsets up to each active segment's
// base, and returns the status then.
func waitAllTiered(t *testing.T, admin, topic string, parts int32) broker.TierStatus {
	t.Helper()
	var st broker.TierStatus
	waitFor(t, "copy lag 0, sealed segments tiered and gone from disk", func() bool {
		st = tierStatus(t, admin, topic)
		for _, p := range st.Partitions {
			if p.CopyLagSegments != 0 || p.LocalSegments != 1 || p.LocalStart != p.RemoteEnd+1 {
				return false
			}
		}
		return len(st.Partitions) == int(parts)
	})
	return st
}

// TestTierRestoreLocalDir runs the status and restore scenario on the
// local-directory backend, kept outside the broker's log dirs.
func TestTierRestoreLocalDir(t *testing.T) {
	cfg := maps.Clone(fastTiering)
	cfg["remote.log.storage.local.dir"] = t.TempDir() // the bucket outlives the brokers' disks
	checkStatusAndRestore(t, cfg)
}

// TestTierRestoreMinIO runs the status and restore scenario on MinIO.
func TestTierRestoreMinIO(t *testing.T) {
	checkStatusAndRestore(t, minioTiering(minio.Start(t)))
}

// checkStatusAndRestore tiers a topic, checks `strata tier status`
// against ListOffsets, then loses the broker's disks and etcd: a fresh
// broker on the same bucket recreates the topic with `strata tier
// restore`, serves every tiered record from offset 0 and takes new ones
// after them. cfg names the bucket.
func checkStatusAndRestore(t *testing.T, cfg map[string]string) {
	const topic, parts, n = "restored", int32(2), 600
	admin1 := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	cfg["metrics.listener"] = admin1
	b1 := harness.Start(t, cfg)
	id := harness.CreateTopic(t, b1.Admin(), topic, parts, tieredTopic)
	cl := b1.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := produceTiered(t, cl, topic, parts, n)
	waitTiered(t, b1, cl, topic, parts)

	st := waitAllTiered(t, admin1, topic, parts)
	ends := map[int32]int64{}
	for _, p := range st.Partitions {
		local, tiered := listOffset(t, cl, topic, p.Partition, -4), listOffset(t, cl, topic, p.Partition, -5)
		if !st.TieringEnabled || p.Broker != 1 || !p.Leader || !p.Tiered || p.TopicID != fmt.Sprintf("%x", [16]byte(id)) ||
			p.LogEnd != n || p.HighWatermark != n || p.LocalStart != local || p.LocalBytes <= 0 ||
			p.RemoteStart != 0 || p.RemoteEnd != tiered || p.RemoteCopies < 3 || p.RemoteBytes <= p.LocalBytes ||
			p.CopyLagBytes != 0 || p.LastError != "" {
			t.Fatalf("status of %s/%d: %+v (local start %d, tiered end %d)", topic, p.Partition, p, local, tiered)
		}
		ends[p.Partition] = p.RemoteEnd
	}
	table, _, code := strataCLI(t, "tier", "status", "--admin", admin1)
	t.Logf("strata tier status:\n%s", table)
	if lines := strings.Split(strings.TrimSpace(table), "\n"); code != 0 || len(lines) != 1+int(parts) ||
		!strings.HasPrefix(lines[0], "BROKER  TOPIC") || !strings.Contains(lines[1], " restored ") || !strings.Contains(lines[1], " leader ") {
		t.Fatalf("status table (exit %d):\n%s", code, table)
	}

	// Disaster: the broker, its log dirs and its embedded etcd are gone;
	// only the bucket is left.
	b1.Stop()
	admin2 := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	cfg["metrics.listener"] = admin2
	b2 := harness.Start(t, cfg)
	// A second incarnation of the name in the bucket: restore wants the id.
	other := addIncarnation(t, cfg, topic, [16]byte(id))
	_, errOut, code := strataCLI(t, "tier", "restore", "--admin", admin2, "--topic", topic)
	if code != 1 || !strings.Contains(errOut, "several topic ids") || !strings.Contains(errOut, other) {
		t.Fatalf("restore with two ids in the bucket: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code := strataCLI(t, "tier", "restore", "--admin", admin2, "--topic", topic, "--topic-id", fmt.Sprintf("%x", [16]byte(id)))
	if code != 0 || !strings.Contains(out, fmt.Sprintf("topic %s (id %x)", topic, [16]byte(id))) {
		t.Fatalf("tier restore: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("strata tier restore:\n%s", out)
	cl2 := b2.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range parts {
		want[p] = want[p][:ends[p]+1] // the active segments never reached the bucket
		if got := listOffset(t, cl2, topic, p, -4); got != ends[p]+1 {
			t.Fatalf("%s/%d: restored local log starts at %d, want %d", topic, p, got, ends[p]+1)
		}
	}
	got := harness.ReadAll(t, b2.Addr(), topic)
	for p := range parts {
		checkPartition(t, topic, p, want[p], got[p])
	}

	more := produceTiered(t, cl2, topic, parts, 50)
	for p := range parts {
		want[p] = append(want[p], more[p]...)
	}
	checkConsumed(t, b2, topic, want)

	_, errOut, code = strataCLI(t, "tier", "restore", "--admin", admin2, "--topic", topic)
	if code != 1 || !strings.Contains(errOut, "exists") {
		t.Fatalf("second restore: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code = strataCLI(t, "tier", "restore", "--resume", "--admin", admin2, "--topic", topic)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if row := strings.Join(strings.Fields(lines[len(lines)-1]), " "); code != 0 || row != fmt.Sprintf("%d 1 0 - - 0 %d", parts-1, ends[parts-1]+1+50) {
		t.Fatalf("restore --resume: exit %d\n%s%s", code, out, errOut)
	}
}

// addIncarnation copies partition 0's manifest of topic (id) to a new
// topic id in the bucket cfg names, as a deleted and re-created topic of
// the same name leaves, and returns that id in hex.
func addIncarnation(t *testing.T, cfg map[string]string, topic string, id [16]byte) string {
	t.Helper()
	settings := harness.BaseConfig(t.TempDir(), 0)
	maps.Copy(settings, cfg)
	bcfg, err := config.Parse(settings)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	store, err := backend.FromConfig(ctx, bcfg)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := store.GetRange(ctx, fmt.Sprintf("%s-%x/0/manifest.json", topic, id), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	other := fmt.Sprintf("%x", bytes.Repeat([]byte{0xab}, 16))
	b = bytes.ReplaceAll(b, fmt.Appendf(nil, "%x", id), []byte(other))
	if err := store.Put(ctx, fmt.Sprintf("%s-%s/0/manifest.json", topic, other), bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	return other
}

// TestTierRestoreCluster restores onto two brokers with replication
// factor 2: the brokers' metadata and disks are all new, the partition
// count and configs come from the manifests (the last partition never
// had data, so it has none), each broker starts the logs of the
// partitions it leads after the tier, the followers copy the leaders and
// a consumer reads every tiered record and the ones produced after the
// restore.
func TestTierRestoreCluster(t *testing.T) {
	const topic, parts = "restored-rf2", int32(4)
	cfg := maps.Clone(fastTiering)
	cfg["remote.log.storage.local.dir"] = t.TempDir()
	admin0 := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	b0 := harness.Start(t, with(cfg, "metrics.listener", admin0))
	harness.CreateTopic(t, b0.Admin(), topic, parts, tieredTopic)
	want := produceTiered(t, b0.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, parts-1, 300)
	for _, p := range waitAllTiered(t, admin0, topic, parts).Partitions {
		want[p.Partition] = want[p.Partition][:p.RemoteEnd+1]
	}
	b0.Stop()

	etcd := harness.StartEtcd(t)
	var bs []*harness.Broker
	var admins []string
	for node := 1; node <= 2; node++ {
		admin := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
		c := with(cfg, "node.id", strconv.Itoa(node), "metadata.etcd.endpoints", etcd.Endpoint(), "metrics.listener", admin)
		bs, admins = append(bs, harness.Start(t, c)), append(admins, admin)
	}
	waitFor(t, "both brokers in broker 1's metadata", func() bool {
		m, err := bs[0].Admin().BrokerMetadata(testCtx(t))
		return err == nil && len(m.Brokers) == 2
	})
	out, errOut, code := strataCLI(t, "tier", "restore", "--admin", strings.Join(admins, ","), "--topic", topic, "--replication-factor", "2")
	t.Logf("strata tier restore:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("tier restore: exit %d", code)
	}
	if got := overrides(t, bs[0].Admin(), topic); !maps.Equal(got, tieredTopic) {
		t.Fatalf("restored configs %v, want %v", got, tieredTopic)
	}
	if n := len(topicDetail(t, bs[0].Admin(), topic).Partitions); n != int(parts) {
		t.Fatalf("restored %d partitions, want %d", n, parts)
	}
	checkConsumed(t, bs[0], topic, want)
	more := produceTiered(t, bs[1].Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, parts, 50)
	for p := range parts {
		want[p] = append(want[p], more[p]...)
	}
	checkConsumed(t, bs[1], topic, want)
	// The followers copied the leaders, the tiered part cold from them.
	waitFor(t, "followers at the leaders' log end", func() bool {
		out, _, code := strataCLI(t, "tier", "status", "--admin", strings.Join(admins, ","), "--topic", topic, "--json")
		var all []broker.TierStatus
		if code != 0 || json.Unmarshal([]byte(out), &all) != nil || len(all) != 2 {
			t.Fatalf("tier status: exit %d, %q", code, out)
		}
		ends := map[int32][]int64{}
		for _, st := range all {
			for _, ps := range st.Partitions {
				ends[ps.Partition] = append(ends[ps.Partition], ps.LogEnd)
			}
		}
		for p := range parts {
			if e := ends[p]; len(e) != 2 || e[0] != e[1] || e[0] != int64(len(want[p])) {
				return false
			}
		}
		return true
	})
}

// with returns a copy of cfg with the key, value pairs kv set.
func with(cfg map[string]string, kv ...string) map[string]string {
	c := maps.Clone(cfg)
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i]] = kv[i+1]
	}
	return c
}
