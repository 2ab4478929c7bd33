package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/peer"
	"github.com/strata-broker/strata/test/harness"
)

// opsCluster starts three brokers and an RF=3 topic with min.insync.replicas=2.
func opsCluster(t *testing.T, topic string, partitions int32) ([]*harness.Broker, *kadm.Client) {
	t.Helper()
	bs := startCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "2000"})
	adm := bs[0].Admin()
	resp, err := adm.CreateTopic(testCtx(t), partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	return bs, adm
}

// seeds lists every broker's address for a client.
func seeds(bs []*harness.Broker) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Addr())
	}
	return out
}

// waitFullISR waits until every partition of topic has all n replicas in sync.
func waitFullISR(t *testing.T, adm *kadm.Client, topic string, n int) {
	t.Helper()
	waitUntil(t, "full ISRs", 30*time.Second, func() bool {
		for _, s := range isr(t, adm, topic) {
			if len(s) != n {
				return false
			}
		}
		return true
	})
}

// TestControlledShutdown stops a broker that leads partitions while an
// idempotent acks=all producer runs: the producer sees no error, no
// acknowledged record is lost, and the leaderships moved before the
// broker closed (its log says so).
func TestControlledShutdown(t *testing.T) {
	const topic = "ctl-shutdown"
	bs, adm := opsCluster(t, topic, 3)
	waitFullISR(t, adm, topic, 3)
	victim := topicDetail(t, adm, topic).Partitions[0].Leader
	if victim < 1 || victim > 3 {
		t.Fatalf("partition 0 has leader %d", victim)
	}
	var live []*harness.Broker
	for _, b := range bs {
		if b != bs[victim-1] {
			live = append(live, b)
		}
	}
	cl := harness.NewClient(t, live[0].Addr(), kgo.SeedBrokers(seeds(bs)...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second))

	const total = 600
	ctx := testCtx(t)
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		errs  []error
	)
	produce := func(from, to int) {
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			r := &kgo.Record{Value: []byte("v-" + strconv.Itoa(i))}
			wg.Add(1)
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				acked[string(r.Value)] = true
			})
			if i%20 == 19 {
				wg.Wait() // a steady stream rather than one burst
			}
		}
		wg.Wait()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		produce(0, total/2)
	}()
	bs[victim-1].Stop()
	<-done
	produce(total/2, total)
	if len(errs) > 0 {
		t.Fatalf("producer saw %d errors, first: %v", len(errs), errs[0])
	}
	if len(acked) != total {
		t.Fatalf("acked %d of %d", len(acked), total)
	}
	td := topicDetail(t, live[0].Admin(), topic)
	for p, pd := range td.Partitions {
		if pd.Leader == victim {
			t.Fatalf("partition %d still led by stopped broker %d: %+v", p, victim, td.Partitions)
		}
	}
	logged, _ := os.ReadFile(filepath.Join(filepath.Dir(bs[victim-1].Dir()), "broker.log"))
	if !strings.Contains(string(logged), "controlled shutdown: leadership moved") {
		t.Fatalf("broker %d did not hand its leaderships over before closing", victim)
	}
	got := harness.ReadAll(t, live[0].Addr(), topic)
	seen := map[string]int{}
	for _, rs := range got {
		for _, r := range rs {
			seen[string(r.Value)]++
		}
	}
	for v := range acked {
		if seen[v] != 1 {
			t.Fatalf("acked record %s read %d times", v, seen[v])
		}
	}
}

// TestElectLeaders checks preferred and unclean elections through kadm:
// after the preferred leader of some partitions was stopped and returned,
// a preferred election gives them back to it; partitions already led by
// their preferred replica answer ELECTION_NOT_NEEDED, as does an unclean
// election of a partition with a live leader.
func TestElectLeaders(t *testing.T) {
	const topic = "elect"
	bs, adm := opsCluster(t, topic, 3)
	waitFullISR(t, adm, topic, 3)
	ctx := testCtx(t)

	bs[0].Restart() // broker 1 hands its leaderships over, then returns
	adm = bs[1].Admin()
	waitFullISR(t, adm, topic, 3)
	prefersOne := map[int32]bool{}
	for p, pd := range topicDetail(t, adm, topic).Partitions {
		if pd.Replicas[0] == 1 {
			prefersOne[p] = true
			if pd.Leader == 1 {
				t.Fatalf("partition %d already led by broker 1 before the election", p)
			}
		}
	}
	if len(prefersOne) == 0 {
		t.Fatal("no partition prefers broker 1")
	}
	// One election sent straight to a broker that is not the controller:
	// it forwards the request and relays the controller's answer.
	forwarded := slices.Sorted(maps.Keys(prefersOne))[0]
	if code := electAt(t, bs, topic, forwarded, ""); code != 0 {
		t.Fatalf("forwarded election of partition %d: %v", forwarded, kerr.ErrorForCode(code))
	}
	waitUntil(t, "forwarded election applied", 10*time.Second, func() bool {
		return topicDetail(t, adm, topic).Partitions[forwarded].Leader == 1
	})
	// A request that is itself forwarded is not forwarded again.
	if code := electAt(t, bs, topic, forwarded, peer.ClientID); code != kerr.NotController.Code {
		t.Fatalf("forwarded request at a non-controller: %v, want NOT_CONTROLLER", kerr.ErrorForCode(code))
	}
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil {
		t.Fatalf("elect preferred: %v", err)
	}
	for _, r := range res[topic] {
		switch {
		case prefersOne[r.Partition] && r.Partition != forwarded && r.Err != nil:
			t.Fatalf("partition %d: %v", r.Partition, r.Err)
		case (!prefersOne[r.Partition] || r.Partition == forwarded) && !errors.Is(r.Err, kerr.ElectionNotNeeded):
			t.Fatalf("partition %d: got %v, want ELECTION_NOT_NEEDED", r.Partition, r.Err)
		}
	}
	if len(res[topic]) != 3 {
		t.Fatalf("results for %d partitions, want 3", len(res[topic]))
	}
	waitUntil(t, "preferred leaders", 10*time.Second, func() bool {
		for _, pd := range topicDetail(t, adm, topic).Partitions {
			if pd.Leader != pd.Replicas[0] {
				return false
			}
		}
		return true
	})

	res, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{topic: {0: {}}, "no-such-topic": {0: {}}})
	if err != nil {
		t.Fatalf("elect unclean: %v", err)
	}
	if r := res[topic][0]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("unclean election with a live leader: %v", r.Err)
	}
	if r := res["no-such-topic"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v", r.Err)
	}
}

// electAt sends a preferred ElectLeaders for one partition to a broker
// that is not the controller, as a client with clientID ("" for kgo's
// default), and returns the partition's code.
func electAt(t *testing.T, bs []*harness.Broker, topic string, p int32, clientID string) int16 {
	t.Helper()
	ctx := testCtx(t)
	opts := []kgo.Opt{kgo.SeedBrokers(seeds(bs)...)}
	if clientID != "" {
		opts = append(opts, kgo.ClientID(clientID))
	}
	cl := harness.NewClient(t, bs[0].Addr(), opts...)
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	var other int32 = -1
	for _, b := range md.Brokers {
		if b.NodeID != md.ControllerID {
			other = b.NodeID
			break
		}
	}
	if other < 0 {
		t.Fatalf("no broker other than the controller %d", md.ControllerID)
	}
	req := kmsg.NewPtrElectLeadersRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	kresp, err := cl.Broker(int(other)).Request(ctx, req)
	if err != nil {
		t.Fatalf("ElectLeaders at broker %d: %v", other, err)
	}
	resp := kresp.(*kmsg.ElectLeadersResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ElectLeaders at broker %d: %+v", other, resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestPartitionReassignment moves an RF=1 partition off its broker onto
// the other two (including the leader switch) and checks the data moved
// with it, the old replica's log was deleted, and the request validation.
func TestPartitionReassignment(t *testing.T) {
	bs := startCluster(t, 3, nil)
	adm := bs[0].Admin()
	ctx := testCtx(t)
	const topic = "moving"
	harness.CreateTopic(t, adm, topic, 1, nil)
	waitUntil(t, "topic metadata", 10*time.Second, func() bool {
		md, err := adm.Metadata(ctx, topic)
		return err == nil && md.Topics[topic].Err == nil && len(md.Topics[topic].Partitions) == 1
	})
	from := topicDetail(t, adm, topic).Partitions[0].Replicas
	if len(from) != 1 {
		t.Fatalf("replicas %v, want one", from)
	}
	old := from[0]
	var target []int32
	for id := int32(1); id <= 3; id++ {
		if id != old {
			target = append(target, id)
		}
	}
	cl := bs[0].Client(kgo.SeedBrokers(seeds(bs)...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 100 {
		produceSync(t, cl, &kgo.Record{Value: fmt.Appendf(nil, "r-%d", i)})
	}

	var bad kadm.AlterPartitionAssignmentsReq
	bad.Assign(topic, 0, []int32{target[0], 42})
	bad.CancelAssign(topic+"-nope", 0)
	resp, err := adm.AlterPartitionAssignments(ctx, bad)
	if err != nil {
		t.Fatalf("alter (bad): %v", err)
	}
	if r := resp[topic][0]; !errors.Is(r.Err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("unknown broker: %v, want INVALID_REPLICA_ASSIGNMENT", r.Err)
	}
	if r := resp[topic+"-nope"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v", r.Err)
	}
	var none kadm.AlterPartitionAssignmentsReq
	none.CancelAssign(topic, 0)
	if resp, err = adm.AlterPartitionAssignments(ctx, none); err != nil || !errors.Is(resp[topic][0].Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel without reassignment: %v %v", err, resp[topic][0].Err)
	}

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, target)
	if resp, err = adm.AlterPartitionAssignments(ctx, req); err != nil || resp[topic][0].Err != nil {
		t.Fatalf("alter: %v %v", err, resp[topic][0].Err)
	}
	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if l, ok := listed[topic][0]; ok && (!slices.Equal(l.AddingReplicas, target) || !slices.Equal(l.RemovingReplicas, from)) {
		t.Fatalf("listed %+v, want adding %v removing %v", l, target, from)
	}
	waitUntil(t, "reassignment done", 30*time.Second, func() bool {
		listed, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil || len(listed) > 0 {
			return false
		}
		pd := topicDetail(t, adm, topic).Partitions[0]
		return slices.Equal(pd.Replicas, target) && slices.Contains(target, pd.Leader)
	})
	waitUntil(t, "old replica's log deleted", 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(bs[old-1].Dir(), topic+"-0"))
		return os.IsNotExist(err)
	})
	got := harness.ReadAll(t, bs[target[0]-1].Addr(), topic)[0]
	if len(got) != 100 {
		t.Fatalf("read %d records after the move, want 100", len(got))
	}
	for i, r := range got {
		if string(r.Value) != fmt.Sprintf("r-%d", i) {
			t.Fatalf("record %d is %q", i, r.Value)
		}
	}
}

// TestDescribeLogDirs checks every broker reports its log dir with the
// topic's partitions, their sizes and no lag once replicas caught up.
func TestDescribeLogDirs(t *testing.T) {
	const topic = "logdirs"
	bs, adm := opsCluster(t, topic, 2)
	cl := bs[0].Client(kgo.SeedBrokers(seeds(bs)...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 50 {
		produceSync(t, cl, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "d-%d", i)})
	}
	waitFullISR(t, adm, topic, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitUntil(t, "log dirs with data and no lag", 20*time.Second, func() bool {
		all, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil || len(all) != 3 {
			t.Logf("describe log dirs: %d brokers, %v", len(all), err)
			return false
		}
		for id, dirs := range all {
			if len(dirs) != 1 || dirs.Error() != nil {
				t.Fatalf("broker %d: dirs %v err %v", id, dirs, dirs.Error())
			}
			for p := range int32(2) {
				d, ok := dirs.LookupPartition(topic, p)
				if !ok || d.Size <= 0 || d.OffsetLag != 0 {
					t.Logf("broker %d partition %d: %+v", id, p, d)
					return false
				}
			}
			for _, d := range dirs {
				if d.Dir != bs[id-1].Dir() || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
					t.Fatalf("broker %d: dir %q total %d usable %d", id, d.Dir, d.TotalBytes, d.UsableBytes)
				}
			}
		}
		return true
	})
}

// TestDescribeClusterAndOffsetForLeaderEpoch: DescribeCluster lists the
// three brokers and a controller among them; after the leader shuts down
// and the next one appends under a newer epoch, OffsetForLeaderEpoch (as
// a consumer asks it after a leader change, KIP-320) gives the end of
// each epoch.
func TestDescribeClusterAndOffsetForLeaderEpoch(t *testing.T) {
	const topic = "epochs"
	bs, _ := opsCluster(t, topic, 1)
	cl := harness.NewClient(t, bs[0].Addr(), kgo.SeedBrokers(seeds(bs)...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)

	kresp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil || kresp.ErrorCode != 0 {
		t.Fatalf("describe cluster: %v %+v", err, kresp)
	}
	var ids []int32
	for _, b := range kresp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int32{1, 2, 3}) || !slices.Contains(ids, kresp.ControllerID) || kresp.ClusterID == "" {
		t.Fatalf("describe cluster: brokers %v, controller %d, cluster id %q", ids, kresp.ControllerID, kresp.ClusterID)
	}

	leaderAndEpoch := func() (int32, int32) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		p := md.Topics[topic].Partitions[0]
		return p.Leader, p.LeaderEpoch
	}
	for i := range 10 {
		produceSync(t, cl, &kgo.Record{Value: fmt.Appendf(nil, "e0-%d", i)})
	}
	waitFullISR(t, adm, topic, 3)
	leader, first := leaderAndEpoch()
	bs[leader-1].Stop()
	waitUntil(t, "a new leader", 30*time.Second, func() bool {
		l, e := leaderAndEpoch()
		return l > 0 && l != leader && e > first
	})
	for i := range 5 {
		produceSync(t, cl, &kgo.Record{Value: fmt.Appendf(nil, "e1-%d", i)})
	}
	_, current := leaderAndEpoch()

	var req kadm.OffsetForLeaderEpochRequest
	req.Add(topic, 0, first)
	got, err := adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := got[topic][0]; r.Err != nil || r.LeaderEpoch != first || r.EndOffset != 10 {
		t.Fatalf("epoch %d: %+v, want its end at offset 10", first, r)
	}
	req = nil
	req.Add(topic, 0, current)
	if got, err = adm.OffsetForLeaderEpoch(ctx, req); err != nil {
		t.Fatal(err)
	}
	if r := got[topic][0]; r.Err != nil || r.LeaderEpoch != current || r.EndOffset != 15 {
		t.Fatalf("current epoch %d: %+v, want the log end 15", current, r)
	}
}
