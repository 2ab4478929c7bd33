package metadata

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// ChangeKind says which part of the model a Change touches.
type ChangeKind uint8

// The kinds of Change a store feeds into a Cache.
const (
	ChangeTopic         ChangeKind = iota + 1 // a topic's id and configs
	ChangePartition                           // one partition's state
	ChangeBroker                              // one broker registration
	ChangeBrokerConfigs                       // the dynamic configs of one broker or of the cluster default
	ChangeScram                               // one user's SCRAM credentials
	ChangeACL                                 // one ACL binding
	ChangeClientQuotas                        // one client-quota entity's values
)

// Change is one key-level change, as a store's watch delivers it. Deleting
// a topic is a ChangeTopic delete plus one ChangePartition delete per
// partition, normally all in one Apply.
type Change struct {
	Kind   ChangeKind
	Delete bool

	Topic     string            // ChangeTopic, ChangePartition
	ID        TopicID           // ChangeTopic put
	Configs   map[string]string // ChangeTopic, ChangeBrokerConfigs put (owned by the cache afterwards)
	Entity    int32             // ChangeBrokerConfigs: the broker id, or ClusterDefault
	Partition int32             // ChangePartition
	State     PartitionState    // ChangePartition put (owned by the cache afterwards)
	Broker    Broker            // ChangeBroker; a delete needs only Broker.ID
	User      string            // ChangeScram
	// Scram is a ChangeScram put: the user's credentials by mechanism
	// (owned by the cache afterwards).
	Scram map[string]ScramCredential
	ACL   ACL // ChangeACL: the binding put or deleted

	// Quota is a ChangeClientQuotas' entity; Quotas its values by key on a
	// put (owned by the cache afterwards).
	Quota  QuotaEntity
	Quotas map[string]float64
}

// Cache is an in-memory, watch-fed view of the metadata store. Returned
// values are shared immutable snapshots: do not modify them (Clone first).
// The zero value is not usable; call NewCache.
type Cache struct {
	mu     sync.RWMutex
	rev    int64
	closed bool
	done   chan struct{} // closed by Close
	// changed is closed and replaced by every Load, Apply and Close.
	changed chan struct{}
	// parts holds every partition map, also of partitions whose topic key
	// is not (yet) known. Published maps are never mutated: Apply clones
	// a map the first time a batch touches it.
	parts   map[string]map[int32]PartitionState
	topics  map[string]Topic // only names with a topic key; Partitions == parts[name]
	byID    map[TopicID]string
	brokers map[int32]Broker
	// brokerConfigs holds the dynamic broker configs by broker id
	// (ClusterDefault: the cluster default). Published maps are never
	// mutated.
	brokerConfigs map[int32]map[string]string
	// scram holds each user's SCRAM credentials by mechanism. Published
	// maps are never mutated.
	scram map[string]map[string]ScramCredential
	// acls holds the ACL bindings; aclVersion counts the changes of that
	// set (readers rebuild what they derive from it when it moves).
	acls       map[ACL]struct{}
	aclVersion uint64
	sortedACLs []ACL // memo for ACLs; nil when stale

	// quotas holds each client-quota entity's values by key; quotaGen
	// counts their changes, written under mu and read without it (every
	// request's quota check reads it). Published maps are never mutated.
	quotas   map[QuotaEntity]map[string]float64
	quotaGen atomic.Uint64

	sortedTopics  []Topic  // memo for Topics; nil when stale
	sortedBrokers []Broker // memo for Brokers; nil when stale
}

// NewCache returns an empty cache at revision 0.
func NewCache() *Cache {
	c := &Cache{done: make(chan struct{}), changed: make(chan struct{})}
	c.reset()
	return c
}

// reset empties the content. Lock must be held (or c unpublished).
func (c *Cache) reset() {
	c.parts = make(map[string]map[int32]PartitionState)
	c.topics = make(map[string]Topic)
	c.byID = make(map[TopicID]string)
	c.brokers = make(map[int32]Broker)
	c.brokerConfigs = make(map[int32]map[string]string)
	c.scram = make(map[string]map[string]ScramCredential)
	if len(c.acls) > 0 || c.acls == nil {
		c.aclVersion++
	}
	c.acls = make(map[ACL]struct{})
	c.sortedACLs = nil
	c.quotas = make(map[QuotaEntity]map[string]float64)
	c.quotaGen.Add(1)
	c.sortedTopics, c.sortedBrokers = nil, nil
}

// Load replaces the whole content with changes (all puts), a complete
// listing taken at revision rev. Used at start and after the watch broke.
func (c *Cache) Load(rev int64, changes []Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.reset()
	c.apply(changes)
	c.rev = rev
	c.notify()
}

// Apply applies the changes committed at revision rev, in commit order.
// Batches at or below the current revision are ignored (already seen).
func (c *Cache) Apply(rev int64, changes []Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || rev <= c.rev {
		return
	}
	c.apply(changes)
	c.rev = rev
	c.notify()
}

// apply folds changes into the maps. Lock must be held.
func (c *Cache) apply(changes []Change) {
	cloned := make(map[string]bool) // partition maps already private to this batch
	for _, ch := range changes {
		switch ch.Kind {
		case ChangeTopic:
			if old, ok := c.topics[ch.Topic]; ok {
				delete(c.byID, old.ID)
			}
			if ch.Delete {
				delete(c.topics, ch.Topic)
				continue
			}
			c.topics[ch.Topic] = Topic{Name: ch.Topic, ID: ch.ID, Configs: ch.Configs, Partitions: c.parts[ch.Topic]}
			c.byID[ch.ID] = ch.Topic
		case ChangePartition:
			if !cloned[ch.Topic] {
				cloned[ch.Topic] = true
				m := maps.Clone(c.parts[ch.Topic])
				if m == nil {
					m = make(map[int32]PartitionState)
				}
				c.parts[ch.Topic] = m
			}
			if ch.Delete {
				delete(c.parts[ch.Topic], ch.Partition)
			} else {
				c.parts[ch.Topic][ch.Partition] = ch.State
			}
		case ChangeBroker:
			if ch.Delete {
				delete(c.brokers, ch.Broker.ID)
			} else {
				c.brokers[ch.Broker.ID] = ch.Broker
			}
		case ChangeBrokerConfigs:
			if ch.Delete || len(ch.Configs) == 0 {
				delete(c.brokerConfigs, ch.Entity)
			} else {
				c.brokerConfigs[ch.Entity] = ch.Configs
			}
		case ChangeScram:
			if ch.Delete || len(ch.Scram) == 0 {
				delete(c.scram, ch.User)
			} else {
				c.scram[ch.User] = ch.Scram
			}
		case ChangeACL:
			_, had := c.acls[ch.ACL]
			if ch.Delete {
				delete(c.acls, ch.ACL)
			} else {
				c.acls[ch.ACL] = struct{}{}
			}
			if had == ch.Delete {
				c.aclVersion++
				c.sortedACLs = nil
			}
		case ChangeClientQuotas:
			if ch.Delete || len(ch.Quotas) == 0 {
				delete(c.quotas, ch.Quota)
			} else {
				c.quotas[ch.Quota] = ch.Quotas
			}
			c.quotaGen.Add(1)
		}
	}
	for name := range cloned {
		m := c.parts[name]
		if len(m) == 0 {
			delete(c.parts, name)
			m = nil
		}
		if t, ok := c.topics[name]; ok {
			t.Partitions = m
			c.topics[name] = t
		}
	}
	c.sortedTopics, c.sortedBrokers = nil, nil
}

// notify wakes everyone waiting on Changed. Lock must be held.
func (c *Cache) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Close marks the cache closed: later updates are ignored, waiters in
// WaitRevision return ErrClosed and Done is closed. The content stays
// readable. Idempotent.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	close(c.done)
	c.notify()
}

// Done is closed when the cache is closed.
func (c *Cache) Done() <-chan struct{} { return c.done }

// Changed returns a channel that is closed at the next change of content
// or revision (or at Close). Typical use: take the channel, read the
// cache, wait on the channel, repeat.
func (c *Cache) Changed() <-chan struct{} {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.changed
}

// Revision is the store revision the cache content reflects.
func (c *Cache) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// WaitRevision blocks until the cache reflects revision rev or later. It
// fails with ctx's error or ErrClosed.
func (c *Cache) WaitRevision(ctx context.Context, rev int64) error {
	for {
		c.mu.RLock()
		cur, closed, ch := c.rev, c.closed, c.changed
		c.mu.RUnlock()
		switch {
		case cur >= rev:
			return nil
		case closed:
			return fmt.Errorf("wait for revision %d (at %d): %w", rev, cur, ErrClosed)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for revision %d (at %d): %w", rev, cur, ctx.Err())
		}
	}
}

// Topic returns the named topic.
func (c *Cache) Topic(name string) (Topic, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.topics[name]
	return t, ok
}

// TopicByID returns the topic with that id.
func (c *Cache) TopicByID(id TopicID) (Topic, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	name, ok := c.byID[id]
	if !ok {
		return Topic{}, false
	}
	return c.topics[name], true
}

// Partition returns one partition's state (false if the topic or the
// partition is unknown).
func (c *Cache) Partition(topic string, partition int32) (PartitionState, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.topics[topic]
	if !ok {
		return PartitionState{}, false
	}
	s, ok := t.Partitions[partition]
	return s, ok
}

// Topics returns all topics sorted by name, in a fresh slice.
func (c *Cache) Topics() []Topic {
	c.mu.RLock()
	if c.sortedTopics != nil {
		defer c.mu.RUnlock()
		return slices.Clone(c.sortedTopics)
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sortedTopics == nil {
		c.sortedTopics = slices.SortedFunc(maps.Values(c.topics), func(a, b Topic) int { return cmp.Compare(a.Name, b.Name) })
		if c.sortedTopics == nil {
			c.sortedTopics = []Topic{}
		}
	}
	return slices.Clone(c.sortedTopics)
}

// Broker returns the live broker with that id.
func (c *Cache) Broker(id int32) (Broker, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	b, ok := c.brokers[id]
	return b, ok
}

// Brokers returns the live brokers sorted by id, in a fresh slice.
func (c *Cache) Brokers() []Broker {
	c.mu.RLock()
	if c.sortedBrokers != nil {
		defer c.mu.RUnlock()
		return slices.Clone(c.sortedBrokers)
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sortedBrokers == nil {
		c.sortedBrokers = slices.SortedFunc(maps.Values(c.brokers), func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
		if c.sortedBrokers == nil {
			c.sortedBrokers = []Broker{}
		}
	}
	return slices.Clone(c.sortedBrokers)
}

// BrokerConfigs returns the dynamic configs of broker id, or the cluster
// default for ClusterDefault; nil when there are none. The map is shared:
// do not modify it.
func (c *Cache) BrokerConfigs(id int32) map[string]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.brokerConfigs[id]
}

// ScramCredential returns user's credential for a SCRAM mechanism
// ("SCRAM-SHA-256", "SCRAM-SHA-512"); false when it has none.
func (c *Cache) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cred, ok := c.scram[user][mechanism]
	return cred, ok
}

// ScramUsers returns every user's SCRAM credentials by mechanism. The
// maps are shared: do not modify them.
func (c *Cache) ScramUsers() map[string]map[string]ScramCredential {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.scram)
}

// ACLs returns every ACL binding in CompareACLs order, and the version of
// that set: it changes whenever the set does, so a reader that derives an
// index from the ACLs rebuilds it only then. The slice is shared: do not
// modify it.
func (c *Cache) ACLs() ([]ACL, uint64) {
	c.mu.RLock()
	if c.sortedACLs != nil {
		defer c.mu.RUnlock()
		return c.sortedACLs, c.aclVersion
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sortedACLs == nil {
		c.sortedACLs = slices.SortedFunc(maps.Keys(c.acls), CompareACLs)
		if c.sortedACLs == nil {
			c.sortedACLs = []ACL{}
		}
	}
	return c.sortedACLs, c.aclVersion
}
