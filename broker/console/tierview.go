package console

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
)

// tierTTL is how long the pages reuse a tier view before the next is
// gathered.
const tierTTL = 2 * time.Second

// replicaState is one replica as its broker reported it.
type replicaState struct {
	Partition int32
	Broker    int32
	Bytes     int64 // its local log's segment bytes
	Tier      handler.ReplicaTier
}

// tierView is every live broker's replicas, their local bytes and tier
// state, as each answered DescribeLogDirs with handler.TierTag: this
// broker in process, the others over the peer client, in parallel and
// bounded by peerWait. It is gathered with the broker's own authority
// and shared by every user's pages; the pages show only topics their
// user may describe.
type tierView struct {
	topics   map[string][]replicaState // every replica reported, by topic
	answered map[int32]bool            // brokers that answered
	// by topic and by broker, see summarize
	hot, cold     map[string]int64
	local, remote map[int32]int64
}

// newTierView is an empty view.
func newTierView() *tierView {
	return &tierView{topics: map[string][]replicaState{}, answered: map[int32]bool{}}
}

// tierView is the current view, gathered again when older than tierTTL.
func (s *Server) tierView(q *req) *tierView {
	env := q.env
	return s.tier.get(tierTTL, func() *tierView {
		ctx, cancel := s.gatherCtx() // not the request's: the view outlives it
		defer cancel()
		return gatherTier(ctx, env)
	})
}

// leaders is, by partition, the leader replica's report of topic or
// failing that the replica's with the most tiered; Broker is -1 where no
// replica reported.
func (v *tierView) leaders(topic string) []replicaState {
	var out []replicaState
	for _, r := range v.topics[topic] {
		for int(r.Partition) >= len(out) {
			out = append(out, replicaState{Partition: int32(len(out)), Broker: -1})
		}
		best := &out[r.Partition]
		if best.Broker < 0 || r.Tier.Leader || (!best.Tier.Leader && r.Tier.RemoteBytes > best.Tier.RemoteBytes) {
			*best = r
		}
	}
	return out
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
	v.hot, v.cold = make(map[string]int64, len(v.topics)), make(map[string]int64, len(v.topics))
	v.local, v.remote = map[int32]int64{}, map[int32]int64{}
	for topic, rs := range v.topics {
		var hot int64
		for _, r := range rs {
			hot += r.Bytes
			v.local[r.Broker] += r.Bytes
			if r.Tier.Leader {
				v.remote[r.Broker] += r.Tier.RemoteBytes
			}
		}
		v.hot[topic] = hot
		var cold int64
		for _, l := range v.leaders(topic) {
			cold += l.Tier.RemoteBytes
		}
		v.cold[topic] = cold
	}
}

// tierRows is the tier state of topic's partitions, each as its leader
// reports it, by partition.
func (v *tierView) tierRows(topic string) []replicaState {
	return slices.DeleteFunc(v.leaders(topic), func(r replicaState) bool { return r.Broker < 0 })
}

// gatherTier asks every live broker for its replicas.
func gatherTier(ctx context.Context, env *handler.Env) *tierView {
	v := newTierView()
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
		v.add(a.id, a.res)
	}
	v.summarize()
	return v
}

// add records broker id's answer.
func (v *tierView) add(id int32, res *kmsg.DescribeLogDirsResponse) {
	v.answered[id] = true
	for i := range res.Dirs {
		d := &res.Dirs[i]
		tiers, _, err := handler.ParseReplicaTiers(d)
		if err != nil {
			tiers = nil // sizes without tier state
		}
		n := 0
		for _, t := range d.Topics {
			rs := slices.Grow(v.topics[t.Topic], len(t.Partitions))
			for _, p := range t.Partitions {
				r := replicaState{Partition: p.Partition, Broker: id, Bytes: p.Size, Tier: handler.ReplicaTier{RemoteStart: -1, RemoteEnd: -1, LocalStart: -1}}
				if n < len(tiers) {
					r.Tier = tiers[n]
				}
				n++
				if p.Partition >= 0 {
					rs = append(rs, r)
				}
			}
			v.topics[t.Topic] = rs
		}
	}
}
