package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"testing"
	"time"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/minio"
)

// minioTiering is the broker configuration for tiering into srv.
func minioTiering(srv *minio.Server) map[string]string {
	cfg := map[string]string{
		"remote.log.storage.backend":       "s3",
		"remote.log.storage.s3.bucket":     srv.Bucket,
		"remote.log.storage.s3.endpoint":   srv.Endpoint,
		"remote.log.storage.s3.region":     srv.Region,
		"remote.log.storage.s3.access.key": srv.AccessKey,
		"remote.log.storage.s3.secret.key": srv.SecretKey,
		"remote.log.storage.s3.path.style": "true",
	}
	maps.Copy(cfg, fastTiering)
	return cfg
}

// remoteManifest reads the per-partition manifest the copier keeps in the
// bucket and returns the finished copies' offset ranges.
func remoteManifest(t *testing.T, srv *minio.Server, topic string, id kadm.TopicID, p int32) [][2]int64 {
	t.Helper()
	key := fmt.Sprintf("%s-%x/%d/manifest.json", topic, [16]byte(id), p)
	obj, err := srv.Client.GetObject(testCtx(t), srv.Bucket, key, miniogo.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	var m struct {
		Segments []struct {
			Base int64 `json:"base_offset"`
			End  int64 `json:"end_offset"`
		} `json:"segments"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", key, err)
	}
	var out [][2]int64
	for _, s := range m.Segments {
		out = append(out, [2]int64{s.Base, s.End})
	}
	return out
}

// TestTieredLeaderFailover: three brokers share a MinIO bucket; the
// leader of a tiered RF=3 partition stops after copying; the new leader
// resumes copying from the metadata in etcd with no gap or duplicate, and
// every record reads back from offset 0.
func TestTieredLeaderFailover(t *testing.T) {
	srv := minio.Start(t)
	bs := startCluster(t, 3, minioTiering(srv))
	adm := bs[0].Admin()
	cfg := map[string]*string{}
	for k, v := range tieredTopic {
		cfg[k] = kadm.StringPtr(v)
	}
	resp, err := adm.CreateTopic(testCtx(t), 1, 3, cfg, "tiered-ha")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	leaderOf := func(adm *kadm.Client) int32 {
		md, err := adm.Metadata(testCtx(t), "tiered-ha")
		if err != nil {
			return -1
		}
		return md.Topics["tiered-ha"].Partitions[0].Leader
	}
	waitUntil(t, "a leader", 20*time.Second, func() bool { return leaderOf(adm) > 0 })
	seeds := kgo.SeedBrokers(bs[0].Addr(), bs[1].Addr(), bs[2].Addr())
	cl := harness.NewClient(t, bs[0].Addr(), seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := produceTiered(t, cl, "tiered-ha", 1, 800)[0]
	old := leaderOf(adm)
	lb := bs[old-1]
	lcl := lb.Client()
	waitFor(t, "first segments tiered", func() bool { return listOffset(t, lcl, "tiered-ha", 0, -5) > 0 })

	lb.Stop()
	var rest *kadm.Client
	for _, b := range bs {
		if b != lb {
			rest = b.Admin()
			break
		}
	}
	waitUntil(t, "a new leader", 30*time.Second, func() bool { l := leaderOf(rest); return l > 0 && l != old })
	more := produceTiered(t, cl, "tiered-ha", 1, 800)[0]
	want = append(want, more...)
	nb := bs[leaderOf(rest)-1]
	ncl := nb.Client()
	end := listOffset(t, ncl, "tiered-ha", 0, -1)
	waitFor(t, "new leader tiers past the failover", func() bool {
		return listOffset(t, ncl, "tiered-ha", 0, -5) > int64(len(want))/2 && listOffset(t, ncl, "tiered-ha", 0, -4) > int64(len(want))/2
	})
	id := topicDetail(t, rest, "tiered-ha").ID
	ranges := remoteManifest(t, srv, "tiered-ha", id, 0)
	for i, r := range ranges {
		if i == 0 && r[0] != 0 || i > 0 && r[0] != ranges[i-1][1]+1 {
			t.Fatalf("manifest has a gap or duplicate: %v", ranges)
		}
	}
	if end != int64(len(want)) {
		t.Fatalf("high watermark %d, produced %d", end, len(want))
	}
	got := harness.ReadAll(t, nb.Addr(), "tiered-ha")
	checkPartition(t, "tiered-ha", 0, want, got[0])
}
