package e2e

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/minio"
)

// TestTieredNewFollowerSkipsTier: a replica added to a tiered partition
// does not copy the bucket back to its disk: the leader answers
// OFFSET_MOVED_TO_TIERED_STORAGE and the follower starts at the leader's
// local log start (KIP-405). It still joins the ISR, and once it leads it
// serves every record from offset 0, the old ones from the bucket.
func TestTieredNewFollowerSkipsTier(t *testing.T) {
	const topic = "tiered-new-follower"
	srv := minio.Start(t)
	bs := startCluster(t, 2, minioTiering(srv))
	adm := bs[0].Admin()
	harness.CreateTopic(t, adm, topic, 1, tieredTopic)
	pd := topicDetail(t, adm, topic).Partitions[0]
	if len(pd.Replicas) != 1 {
		t.Fatalf("replicas %v, want one", pd.Replicas)
	}
	old := pd.Leader
	newID := 3 - old
	lb, nb := bs[old-1], bs[newID-1]
	cl := harness.NewClient(t, lb.Addr(), kgo.SeedBrokers(seeds(bs)...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := produceTiered(t, cl, topic, 1, 800)[0]
	lcl := lb.Client()
	waitFor(t, "the leader's local log to start past the tier", func() bool { return listOffset(t, lcl, topic, 0, -4) > int64(len(want))/2 })
	localStart := listOffset(t, lcl, topic, 0, -4)
	// Keep local segments from now on, so a replica that copied the tier
	// back would still show it.
	alter, err := adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "local.retention.ms", Value: kadm.StringPtr("-2")}}, topic)
	if err == nil {
		_, err = alter.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("alter local.retention.ms: %v", err)
	}

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{old, newID})
	resp, err := adm.AlterPartitionAssignments(testCtx(t), req)
	if err != nil || resp[topic][0].Err != nil {
		t.Fatalf("add a replica: %v %+v", err, resp)
	}
	waitUntil(t, "the new replica in the ISR", 30*time.Second, func() bool {
		pd := topicDetail(t, adm, topic).Partitions[0]
		return slices.Contains(pd.ISR, newID)
	})
	logs, err := filepath.Glob(filepath.Join(nb.Dir(), topic+"-0", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("new replica's segments: %v %v", logs, err)
	}
	slices.Sort(logs) // 20-digit base offsets sort numerically
	if base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(logs[0]), ".log"), 10, 64); err != nil || base < localStart {
		t.Fatalf("new replica copied the tier back: first segment %s, the leader's local log started at %d", logs[0], localStart)
	}

	more := produceTiered(t, cl, topic, 1, 100)[0]
	want = append(want, more...)
	lb.Stop()
	waitUntil(t, "the new replica to lead", 30*time.Second, func() bool {
		return topicDetail(t, nb.Admin(), topic).Partitions[0].Leader == newID
	})
	got := harness.ReadAll(t, nb.Addr(), topic)
	checkPartition(t, topic, 0, want, got[0])
}
