package handler

import (
	"context"
	"maps"
	"path/filepath"
	"slices"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// DescribeLogDirs: v0-4
//
// Behavior:
// * One log dir (log.dirs' first entry, the one Strata uses) with every
//   partition this broker holds, or those asked for (unknown ones are left
//   out, as Kafka does).
// * Size is the sum of the partition's segment file sizes. OffsetLag is how
//   far the local log end is below the high watermark this broker knows:
//   0 on a leader, a follower's distance to the committed end otherwise.
//   No partition is ever a future replica (IsFuture false).
// * Needs DESCRIBE on the cluster: without it no dirs are listed and, v3+,
//   the error is CLUSTER_AUTHORIZATION_FAILED, as in Kafka.
// * v4 TotalBytes / UsableBytes come from statfs of the dir (-1 if it
//   fails).
// * A request (v2+) carrying Strata's TierTag gets each partition's tier
//   state (ReplicaTier) under that tag of the dir; Kafka's clients never
//   ask.

func handleDescribeLogDirs(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !env.allowedCluster(req, aclDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code // v3+; no dirs before
		return Result{Resp: resp}, nil
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = env.cfg().LogDirs[0]
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	dir.TotalBytes, dir.UsableBytes = -1, -1
	var fs unix.Statfs_t
	if err := unix.Statfs(dir.Dir, &fs); err == nil {
		dir.TotalBytes = int64(fs.Blocks) * int64(fs.Bsize)
		dir.UsableBytes = int64(fs.Bavail) * int64(fs.Bsize)
	}
	var wanted map[string][]int32 // nil: all
	if r.Topics != nil {
		wanted = map[string][]int32{}
		for _, t := range r.Topics {
			wanted[t.Topic] = append(wanted[t.Topic], t.Partitions...)
		}
	}
	_, withTier := tagValue(r.UnknownTags, TierTag)
	var tiers []byte
	byTopic := map[string][]*partition.Partition{}
	for _, p := range env.Partitions.All() {
		if wanted != nil && !slices.Contains(wanted[p.Topic], p.Index) {
			continue
		}
		byTopic[p.Topic] = append(byTopic[p.Topic], p)
	}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = topic
		ps := byTopic[topic]
		slices.SortFunc(ps, func(a, b *partition.Partition) int { return int(a.Index - b.Index) })
		for _, p := range ps {
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = p.Index
			for _, s := range p.Log().Segments() {
				dp.Size += s.Size
			}
			dp.OffsetLag = max(0, p.HighWatermark()-p.Log().LogEndOffset())
			if withTier {
				tiers = replicaTier(p).AppendTo(tiers)
			}
			dt.Partitions = append(dt.Partitions, dp)
		}
		dir.Topics = append(dir.Topics, dt)
	}
	if withTier {
		dir.UnknownTags.Set(TierTag, tiers)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return Result{Resp: resp}, nil
}

// replicaTier is p's tier state for TierTag.
func replicaTier(p *partition.Partition) ReplicaTier {
	t := ReplicaTier{Leader: p.IsLeader(), Tiered: p.Config().RemoteStorageEnable, LocalStart: p.LocalLogStartOffset(), RemoteStart: -1, RemoteEnd: -1}
	if st, ok := p.TierStatus(); ok {
		t.RemoteStart, t.RemoteEnd, t.RemoteBytes = st.RemoteStart, st.RemoteEnd, st.RemoteBytes
		t.CopyLagSegments, t.CopyLagBytes, t.LastError = int64(st.CopyBacklog), st.CopyBacklogBytes, st.LastError
	}
	return t
}
