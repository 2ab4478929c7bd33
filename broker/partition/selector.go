package partition

import (
	"cmp"
	"slices"
)

// PreferredReadReplica is the replica a consumer in rack should fetch
// offset from, as Kafka's RackAwareReplicaSelector picks it (KIP-392): -1,
// the leader itself, when the consumer names no rack, this broker does not
// lead, or the leader is in that rack; otherwise an in-sync follower in the
// rack that is alive (rackOf reports the rack of a live broker) and whose
// log end, as its last fetch told, reaches offset. Among several, the one
// with the highest log end wins, then the lowest id; none gives -1.
//
// rackOf is called without Partition.mu held.
func (p *Partition) PreferredReadReplica(rack string, offset int64, rackOf func(id int32) (string, bool)) int32 {
	if rack == "" || !p.IsLeader() {
		return -1
	}
	if r, ok := rackOf(p.nodeID); ok && r == rack {
		return -1
	}
	type candidate struct {
		id  int32
		leo int64
	}
	var cs []candidate
	p.mu.Lock()
	for _, r := range p.state.ISR {
		if f := p.followers[r]; r != p.nodeID && f != nil && f.leo >= offset {
			cs = append(cs, candidate{r, f.leo})
		}
	}
	p.mu.Unlock()
	slices.SortFunc(cs, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(b.leo, a.leo), cmp.Compare(a.id, b.id))
	})
	for _, c := range cs {
		if r, ok := rackOf(c.id); ok && r == rack {
			return c.id
		}
	}
	return -1
}
