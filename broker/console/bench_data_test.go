package console

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

// The data the groups and messages pages read in the generated cluster.
const (
	// dataGroups groups commit offsets on one local topic each.
	dataGroups = 1_000
	// bigGroup commits offsets on every partition of bigGroupTopics
	// topics; those beyond the local ones are led by brokers that do not
	// run here, so their lag rows carry the error.
	bigGroup       = "group-big"
	bigGroupTopics = 1_000
	// maxLocalTopics bounds the topics with logs: opening and closing a
	// log costs milliseconds of file system calls, so a thousand logs
	// keep the set-up within seconds.
	maxLocalTopics = 100
	// messagesTopic's partitions hold messageRecords records each; the
	// other local partitions hold a few.
	messagesTopic  = "topic-00000"
	messageRecords = 10_000
)

// localState is a partition led by this broker alone.
var localState = metadata.PartitionState{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1}

// localTopics is how many topics of parts partitions have logs: at most
// maxLocalTopics, and what this broker's partition budget (the open-file
// limit) leaves next to __consumer_offsets.
func localTopics(tb testing.TB, parts int) int {
	cfg := config.Default()
	room := int(partition.BudgetFor(cfg).MaxPartitions) - int(cfg.OffsetsTopicNumPartitions)
	n := min(maxLocalTopics, room/parts)
	if n < 1 {
		tb.Skipf("the open-file limit leaves room for %d partitions", room)
	}
	return n
}

// offsetsTopic is __consumer_offsets with n partitions led by this broker.
func offsetsTopic(n int32) []metadata.Change {
	id := metadata.NewTopicID()
	out := []metadata.Change{{Kind: metadata.ChangeTopic, Topic: group.TopicName, ID: id, Configs: map[string]string{"cleanup.policy": "compact"}}}
	for p := range n {
		out = append(out, metadata.Change{Kind: metadata.ChangePartition, Topic: group.TopicName, Partition: p, State: localState})
	}
	return out
}

// withLogs opens the logs of the partitions changes has this broker
// lead, runs the group coordinator over __consumer_offsets, writes
// records to the local topics and commits the groups' offsets through
// the broker's OffsetCommit. The partition manager is given a cache of
// only those partitions, so that it opens them and not every replica of
// the generated metadata.
func withLogs(tb testing.TB, env *handler.Env, changes []metadata.Change) {
	tb.Helper()
	log := env.Log
	var mine []metadata.Change
	local := map[string]bool{}
	for _, c := range changes {
		if c.Kind == metadata.ChangePartition && c.State.Leader == 1 && len(c.State.Replicas) == 1 {
			local[c.Topic] = true
		}
	}
	for _, c := range changes {
		if c.Kind == metadata.ChangeBroker || local[c.Topic] {
			mine = append(mine, c)
		}
	}
	sub := metadata.NewCache()
	sub.Load(1, mine)
	parts, err := partition.NewManager(env.Cfg, sub, log)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = parts.Close() })
	if err := parts.Sync(); err != nil {
		tb.Fatal(err)
	}
	env.Partitions = parts

	groups := group.New(group.ConfigFrom(env.Cfg.Load()), log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); groups.Run(ctx, 1, env.Cache, parts) }()
	tb.Cleanup(func() { cancel(); <-done; _ = groups.Close() })
	env.Groups = groups
	n := env.Cfg.Load().OffsetsTopicNumPartitions
	deadline := time.Now().Add(time.Minute)
	for p := int32(0); p < n; {
		if groups.Loaded(p) {
			p++
			continue
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s-%d not loaded within a minute", group.TopicName, p)
		}
		time.Sleep(time.Millisecond)
	}

	var topics []string
	for _, t := range env.Cache.Topics() {
		if local[t.Name] && t.Name != group.TopicName {
			topics = append(topics, t.Name)
		}
	}
	ends := map[string][]int64{}
	for _, name := range topics {
		t, _ := env.Cache.Topic(name)
		for i := range int32(len(t.Partitions)) {
			n := 1 + int(i)%5
			if name == messagesTopic {
				n = messageRecords
			}
			ends[name] = append(ends[name], produce(tb, parts, name, i, n))
		}
	}
	be := &backend{env: env, asBroker: true}
	for g := range dataGroups {
		name := topics[g%len(topics)]
		commit(tb, be, fmt.Sprintf("group-%05d", g), map[string][]int64{name: half(ends[name])})
	}
	// The big group commits a hundred topics a request.
	var all []metadata.Topic
	for _, t := range env.Cache.Topics() {
		if t.Name != group.TopicName {
			all = append(all, t)
		}
	}
	for from := 0; from < bigGroupTopics && from < len(all); from += 100 {
		offsets := map[string][]int64{}
		for _, t := range all[from:min(from+100, bigGroupTopics, len(all))] {
			if e, ok := ends[t.Name]; ok {
				offsets[t.Name] = half(e)
			} else {
				offsets[t.Name] = make([]int64, len(t.Partitions))
			}
		}
		commit(tb, be, bigGroup, offsets)
	}
}

// half is the offsets halfway to ends.
func half(ends []int64) []int64 {
	out := make([]int64, len(ends))
	for i, e := range ends {
		out[i] = e / 2
	}
	return out
}

// produce appends n records to a local partition as its leader does,
// in batches of up to a thousand, and returns its high watermark.
func produce(tb testing.TB, parts *partition.Manager, topic string, part int32, n int) int64 {
	tb.Helper()
	p, ok := parts.Get(topic, part)
	if !ok {
		tb.Fatalf("%s-%d not open", topic, part)
	}
	now := time.Now().UnixMilli()
	for from := 0; from < n; from += 1000 {
		var recs []record.Record
		for i := from; i < min(from+1000, n); i++ {
			recs = append(recs, record.Record{OffsetDelta: int32(i - from),
				Key:     fmt.Appendf(nil, "key-%d", i),
				Value:   fmt.Appendf(nil, `{"id":%d,"topic":%q,"partition":%d,"note":"generated record of the page benchmark"}`, i, topic, part),
				Headers: []record.Header{{Key: "source", Value: []byte("bench")}}})
		}
		b, err := record.Build(record.BuildOptions{FirstTimestamp: now}, recs)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := p.Append([]record.Batch{b}, now); err != nil {
			tb.Fatal(err)
		}
	}
	return p.HighWatermark()
}

// commit commits a group's offsets (by topic, one per partition) through
// the broker's OffsetCommit, as a client outside the group does.
func commit(tb testing.TB, be *backend, name string, offsets map[string][]int64) {
	tb.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = name, -1
	for topic, offs := range offsets {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for p, o := range offs {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = int32(p), o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	res, err := be.local(context.Background(), req)
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range res.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				tb.Fatalf("commit %s %s-%d: %v", name, t.Topic, p.Partition, err)
			}
		}
	}
}
