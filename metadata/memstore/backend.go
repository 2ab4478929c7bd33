package memstore

import (
	"maps"
	"slices"
	"sync"

	"github.com/strata-broker/strata/metadata"
)

// Backend is the state several Store handles share, as brokers share one
// etcd. Create it with NewBackend; the zero value is not usable.
type Backend struct {
	mu        sync.Mutex
	rev       int64 // revision of the last write
	clusterID string
	topics    map[string]*topic
	brokers   map[int32]*registration // the live registration of each id
	nextPID   int64
	reassign  map[partKey]metadata.Reassignment
	remote    map[partKey]*remotePartition // by topic id and partition
	deleted   map[metadata.TopicID]string  // deleted-topic markers
	// brokerConfigs holds the dynamic broker configs by broker id or
	// metadata.ClusterDefault; a stored map is never modified (the
	// caches share it).
	brokerConfigs map[int32]map[string]string
	// scram holds each user's SCRAM credentials by mechanism; a stored
	// map is never modified.
	scram map[string]map[string]metadata.ScramCredential
	acls  map[metadata.ACL]struct{}
	// quotas holds each client-quota entity's values; a stored map is
	// never modified.
	quotas  map[metadata.QuotaEntity]map[string]float64
	ctl     election
	handles map[*Store]struct{} // open handles, whose caches commit feeds
}

// topic is one stored topic. configs is never modified once stored (the
// caches share it); parts is the Backend's own map, whose values are never
// modified in place either.
type topic struct {
	id      metadata.TopicID
	configs map[string]string
	parts   map[int32]metadata.PartitionState
}

// partKey names one partition: of a topic by name (reassignments) or by
// id (remote segments).
type partKey struct {
	topic     string
	id        metadata.TopicID
	partition int32
}

// NewBackend returns an empty backend with a fresh cluster id, at
// revision 1 (the cluster id's creation).
func NewBackend() *Backend {
	return &Backend{
		rev:           1,
		clusterID:     metadata.NewTopicID().String(),
		topics:        map[string]*topic{},
		brokers:       map[int32]*registration{},
		reassign:      map[partKey]metadata.Reassignment{},
		remote:        map[partKey]*remotePartition{},
		deleted:       map[metadata.TopicID]string{},
		brokerConfigs: map[int32]map[string]string{},
		scram:         map[string]map[string]metadata.ScramCredential{},
		acls:          map[metadata.ACL]struct{}{},
		quotas:        map[metadata.QuotaEntity]map[string]float64{},
		ctl:           election{record: noController, changed: make(chan struct{})},
		handles:       map[*Store]struct{}{},
	}
}

// New returns a handle on a new Backend of its own.
func New() *Store { return NewBackend().Open() }

// Open returns a new handle whose Cache holds the backend's content.
func (b *Backend) Open() *Store {
	s := &Store{
		b:     b,
		cache: metadata.NewCache(),
		done:  make(chan struct{}),
		regs:  map[*registration]struct{}{},
		cands: map[*candidate]struct{}{},
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s.cache.Load(b.rev, b.listing())
	b.handles[s] = struct{}{}
	return s
}

// Revision is the revision of the last write.
func (b *Backend) Revision() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rev
}

// ExpireBroker makes the lease of broker id's registration expire now, as
// when its process stops keeping it alive: the broker vanishes from every
// cache and the registration's Lost is closed. It reports whether a
// registration was live.
func (b *Backend) ExpireBroker(id int32) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.brokers[id]
	if r == nil {
		return false
	}
	b.endRegistration(r, true)
	return true
}

// ExpireControllerSession makes the election session of broker id's
// candidacies expire now, elected or waiting: an elected one's term ends
// with metadata.ErrSessionLost, its controller record vanishes and the
// next candidate is elected. It reports whether id had a candidacy.
func (b *Backend) ExpireControllerSession(id int32) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	found := false
	for _, c := range slices.Clone(b.ctl.cands) {
		if c.id == id {
			b.endCandidate(c, errSessionExpired)
			found = true
		}
	}
	return found
}

// commit ends a write: the revision moves on and every open handle's
// cache applies changes at it, so the write is visible to its caller's
// cache when the method returns. The changes' maps and slices must not be
// modified afterwards. b.mu must be held.
func (b *Backend) commit(changes ...metadata.Change) int64 {
	b.rev++
	for h := range b.handles {
		h.cache.Apply(b.rev, changes)
	}
	return b.rev
}

// listing is the whole cached content as puts, for Cache.Load. b.mu must
// be held.
func (b *Backend) listing() []metadata.Change {
	var out []metadata.Change
	for _, name := range slices.Sorted(maps.Keys(b.topics)) {
		out = append(out, topicChanges(name, b.topics[name])...)
	}
	for _, id := range slices.Sorted(maps.Keys(b.brokers)) {
		out = append(out, metadata.Change{Kind: metadata.ChangeBroker, Broker: b.brokers[id].b})
	}
	for _, id := range slices.Sorted(maps.Keys(b.brokerConfigs)) {
		out = append(out, metadata.Change{Kind: metadata.ChangeBrokerConfigs, Entity: id, Configs: b.brokerConfigs[id]})
	}
	for _, user := range slices.Sorted(maps.Keys(b.scram)) {
		out = append(out, metadata.Change{Kind: metadata.ChangeScram, User: user, Scram: b.scram[user]})
	}
	for _, a := range slices.SortedFunc(maps.Keys(b.acls), metadata.CompareACLs) {
		out = append(out, metadata.Change{Kind: metadata.ChangeACL, ACL: a})
	}
	for e, v := range b.quotas { // the cache keys them by entity: order does not matter
		out = append(out, metadata.Change{Kind: metadata.ChangeClientQuotas, Quota: e, Quotas: v})
	}
	return out
}

// topicChanges are the puts of a topic and all its partitions.
func topicChanges(name string, t *topic) []metadata.Change {
	out := []metadata.Change{{Kind: metadata.ChangeTopic, Topic: name, ID: t.id, Configs: t.configs}}
	for _, p := range slices.Sorted(maps.Keys(t.parts)) {
		out = append(out, metadata.Change{Kind: metadata.ChangePartition, Topic: name, Partition: p, State: t.parts[p]})
	}
	return out
}
