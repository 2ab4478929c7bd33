package group

import (
	"cmp"
	"slices"
)

// TopicInfo describes a topic for the server-side assignors of KIP-848
// groups.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Assignment is a set of partitions by topic id; partition lists are
// sorted and free of duplicates.
type Assignment map[[16]byte][]int32

// Server-side assignors of KIP-848 groups (group.consumer.assignors).
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// subscriber is one member's resolved subscription.
type subscriber struct {
	id     string
	topics []TopicInfo
}

// idPartition is one partition of a topic named by id.
type idPartition struct {
	id [16]byte
	p  int32
}

// assignUniform spreads every subscribed partition over the members that
// subscribe to its topic, as evenly as the subscriptions allow (counts
// differ by at most one where members could trade), keeping each member's
// partitions from prev where that does not unbalance the group. subs must
// be sorted by member id.
func assignUniform(subs []subscriber, prev map[string]Assignment) map[string]Assignment {
	eligible := map[idPartition][]string{}
	var all []idPartition
	var names = map[[16]byte]string{}
	for _, s := range subs {
		for _, t := range s.topics {
			names[t.ID] = t.Name
			for p := range t.Partitions {
				k := idPartition{t.ID, p}
				if eligible[k] == nil {
					all = append(all, k)
				}
				eligible[k] = append(eligible[k], s.id)
			}
		}
	}
	slices.SortFunc(all, func(a, b idPartition) int {
		return cmp.Or(cmp.Compare(names[a.id], names[b.id]), cmp.Compare(a.p, b.p))
	})
	owner := map[idPartition]string{}
	count := map[string]int{}
	for _, s := range subs {
		count[s.id] = 0
		for id, ps := range prev[s.id] {
			for _, p := range ps {
				k := idPartition{id, p}
				if owner[k] == "" && slices.Contains(eligible[k], s.id) {
					owner[k] = s.id
					count[s.id]++
				}
			}
		}
	}
	least := func(ms []string) string {
		best := ms[0]
		for _, m := range ms[1:] {
			if count[m] < count[best] {
				best = m
			}
		}
		return best
	}
	// Partitions with the fewest candidates first, so they are not crowded out.
	unowned := slices.DeleteFunc(slices.Clone(all), func(k idPartition) bool { return owner[k] != "" })
	slices.SortStableFunc(unowned, func(a, b idPartition) int { return cmp.Compare(len(eligible[a]), len(eligible[b])) })
	for _, k := range unowned {
		m := least(eligible[k])
		owner[k] = m
		count[m]++
	}
	// Move one partition at a time from the most loaded member able to
	// give one to an eligible member with at least two fewer, so that only
	// members over their share lose partitions.
	byLoad := make([]string, 0, len(subs))
	for _, s := range subs {
		byLoad = append(byLoad, s.id)
	}
	for range len(all) + 1 {
		slices.SortStableFunc(byLoad, func(a, b string) int { return cmp.Compare(count[b], count[a]) })
		if !moveOne(byLoad, all, eligible, owner, count, least) {
			break
		}
	}
	return collect(subs, all, owner)
}

// moveOne moves one partition from the first member of byLoad (most loaded
// first) that owns a partition an eligible member with at least two fewer
// could take. It reports whether it moved one.
func moveOne(byLoad []string, all []idPartition, eligible map[idPartition][]string, owner map[idPartition]string,
	count map[string]int, least func([]string) string) bool {
	for _, from := range byLoad {
		for _, k := range all {
			if owner[k] != from {
				continue
			}
			if to := least(eligible[k]); count[to] < count[from]-1 {
				owner[k] = to
				count[from]--
				count[to]++
				return true
			}
		}
	}
	return false
}

// assignRange gives each member of a topic's subscribers (in member id
// order) a contiguous range of its partitions, the first ones one more
// when the count does not divide evenly, as Kafka's range assignor.
func assignRange(subs []subscriber) map[string]Assignment {
	byTopic := map[[16]byte][]string{}
	var topics []TopicInfo
	for _, s := range subs {
		for _, t := range s.topics {
			if byTopic[t.ID] == nil {
				topics = append(topics, t)
			}
			byTopic[t.ID] = append(byTopic[t.ID], s.id)
		}
	}
	owner := map[idPartition]string{}
	var all []idPartition
	for _, t := range topics {
		ms := byTopic[t.ID]
		per, extra := int(t.Partitions)/len(ms), int(t.Partitions)%len(ms)
		p := int32(0)
		for i, m := range ms {
			n := per
			if i < extra {
				n++
			}
			for range n {
				k := idPartition{t.ID, p}
				owner[k] = m
				all = append(all, k)
				p++
			}
		}
	}
	return collect(subs, all, owner)
}

// collect turns a partition → member map into assignments (every member
// present, possibly empty).
func collect(subs []subscriber, all []idPartition, owner map[idPartition]string) map[string]Assignment {
	out := make(map[string]Assignment, len(subs))
	for _, s := range subs {
		out[s.id] = Assignment{}
	}
	for _, k := range all {
		if m := owner[k]; m != "" {
			out[m][k.id] = append(out[m][k.id], k.p)
		}
	}
	for _, a := range out {
		for id := range a {
			slices.Sort(a[id])
		}
	}
	return out
}

// Assignment helpers.

// clone copies a.
func (a Assignment) clone() Assignment {
	out := make(Assignment, len(a))
	for id, ps := range a {
		out[id] = slices.Clone(ps)
	}
	return out
}

// count is the number of partitions in a.
func (a Assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// has reports whether a holds the partition.
func (a Assignment) has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[id], p)
	return ok
}

// equal reports whether a and b hold the same partitions.
func (a Assignment) equal(b Assignment) bool {
	if a.count() != b.count() {
		return false
	}
	for id, ps := range a {
		if len(ps) > 0 && !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

// minus returns the partitions of a not in b.
func (a Assignment) minus(b Assignment) Assignment {
	out := Assignment{}
	for id, ps := range a {
		for _, p := range ps {
			if !b.has(id, p) {
				out[id] = append(out[id], p)
			}
		}
	}
	return out
}

// intersect returns the partitions in both a and b.
func (a Assignment) intersect(b Assignment) Assignment {
	out := Assignment{}
	for id, ps := range a {
		for _, p := range ps {
			if b.has(id, p) {
				out[id] = append(out[id], p)
			}
		}
	}
	return out
}

// add puts partition p of topic id into a, keeping it sorted.
func (a Assignment) add(id [16]byte, p int32) {
	ps := a[id]
	if i, found := slices.BinarySearch(ps, p); !found {
		a[id] = slices.Insert(ps, i, p)
	}
}

// each calls fn for every partition of a.
func (a Assignment) each(fn func(id [16]byte, p int32)) {
	for id, ps := range a {
		for _, p := range ps {
			fn(id, p)
		}
	}
}
