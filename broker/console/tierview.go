package console

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
)

// tierTTL is how long the pages reuse a tier view before the next is
// gathered.
const tierTTL = 2 * time.Second

// replicaKey names one partition.
type replicaKey struct {
	Topic     string
	Partition int32
}

// replicaState is one replica as its broker reported it.
type replicaState struct {
	Broker int32
	Bytes  int64 // its local log's segment bytes
	Tier   handler.ReplicaTier
}

// tierView is every live broker's replicas, their local bytes and tier
// state, as each answered DescribeLogDirs with handler.TierTag: this
// broker in process, the others over the peer client, in parallel and
// bounded by peerWait. It is gathered with the broker's own authority
// and shared by every user's pages; the pages show only topics their
// user may describe.
type tierView struct {
	replicas map[replicaKey][]replicaState
	answered map[int32]bool // brokers that answered
	// by topic and by broker, see summarize
	hot, cold     map[string]int64
	local, remote map[int32]int64
}

// tierView is the current view, gathered again when older than tierTTL.
func (s *Server) tierView(q *req) *tierView {
	// Not the request's own context: the view outlives it, shared.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q.r.Context()), peerWait)
	defer cancel()
	return s.tier.get(tierTTL, func() *tierView { return gatherTier(ctx, q.env) })
}

// leader is the partition's leader replica's report, or failing that
// any replica's with the most tiered; false when no replica reported.
func (v *tierView) leader(k replicaKey) (replicaState, bool) {
	rs := v.replicas[k]
	if len(rs) == 0 {
		return replicaState{}, false
	}
	best := rs[0]
	for _, r := range rs[1:] {
		if r.Tier.Leader || (!best.Tier.Leader && r.Tier.RemoteBytes > best.Tier.RemoteBytes) {
			best = r
		}
	}
	return best, true
}

// brokerBytes is broker id's local log bytes (every replica it holds)
// and tier bytes (the finished copies of the partitions it leads); -1
// when it did not answer.
func (v *tierView) brokerBytes(id int32) (local, remote int64) {
	if !v.answered[id] {
		return -1, -1
	}
	return v.local[id], v.remote[id]
}

// summarize sums, once per view rather than per page, by topic the hot
// bytes (local logs: every replica on every broker) and the cold bytes
// (object storage: once per partition), and by broker the local and tier
// bytes.
func (v *tierView) summarize() {
	v.hot, v.cold = map[string]int64{}, map[string]int64{}
	v.local, v.remote = map[int32]int64{}, map[int32]int64{}
	for k, rs := range v.replicas {
		for _, r := range rs {
			v.hot[k.Topic] += r.Bytes
			v.local[r.Broker] += r.Bytes
			if r.Tier.Leader {
				v.remote[r.Broker] += r.Tier.RemoteBytes
			}
		}
		if l, ok := v.leader(k); ok {
			v.cold[k.Topic] += l.Tier.RemoteBytes
		}
	}
}

// tierRows is the tier state of topic's partitions, each as its leader
// reports it, by partition.
func (v *tierView) tierRows(topic string, partitions int32) []TierRow {
	var out []TierRow
	for i := range partitions {
		l, ok := v.leader(replicaKey{topic, i})
		if !ok {
			continue
		}
		t := l.Tier
		out = append(out, TierRow{Topic: topic, Partition: i, Broker: l.Broker, Tiered: t.Tiered, LocalStart: t.LocalStart, LocalBytes: l.Bytes,
			RemoteStart: t.RemoteStart, RemoteEnd: t.RemoteEnd, RemoteBytes: t.RemoteBytes,
			CopyLagSegments: int(t.CopyLagSegments), CopyLagBytes: t.CopyLagBytes, LastError: t.LastError})
	}
	return out
}

// gatherTier asks every live broker for its replicas.
func gatherTier(ctx context.Context, env *handler.Env) *tierView {
	v := &tierView{replicas: map[replicaKey][]replicaState{}, answered: map[int32]bool{}}
	be := &backend{env: env, asBroker: true}
	type answer struct {
		id  int32
		res *kmsg.DescribeLogDirsResponse
		err error
	}
	brokers := env.Cache.Brokers()
	ch := make(chan answer, len(brokers))
	for _, b := range brokers {
		go func() {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			req.UnknownTags.Set(handler.TierTag, nil)
			res, err := be.on(ctx, b.ID, req)
			a := answer{id: b.ID, err: err}
			if err == nil {
				a.res = res.(*kmsg.DescribeLogDirsResponse)
				if a.res.GetVersion() < 2 {
					a.err = fmt.Errorf("broker %d: DescribeLogDirs v%d carries no tags", b.ID, a.res.GetVersion())
				} else {
					a.err = kerr.ErrorForCode(a.res.ErrorCode)
				}
			}
			ch <- a
		}()
	}
	for range brokers {
		a := <-ch
		if a.err != nil {
			continue
		}
		v.answered[a.id] = true
		for _, d := range a.res.Dirs {
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					rs := replicaState{Broker: a.id, Bytes: p.Size, Tier: handler.ReplicaTier{RemoteStart: -1, RemoteEnd: -1, LocalStart: -1}}
					if rt, ok, err := handler.ParseReplicaTier(p.UnknownTags); ok && err == nil {
						rs.Tier = rt
					}
					k := replicaKey{t.Topic, p.Partition}
					v.replicas[k] = append(v.replicas[k], rs)
				}
			}
		}
	}
	v.summarize()
	return v
}
