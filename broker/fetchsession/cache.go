package fetchsession

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Session ids and epochs with a meaning of their own in a fetch request.
const (
	// InvalidSessionID is no session: a sessionless fetch, or an answer
	// that opened none.
	InvalidSessionID int32 = 0
	// InitialEpoch asks for a full fetch that opens a session.
	InitialEpoch int32 = 0
	// FinalEpoch asks for a full fetch without a session (closing the one
	// named, if any).
	FinalEpoch int32 = -1
)

// EvictAfter is how long a session must stay unused before any new one
// may evict it, and how old it must be before a more valuable one may
// (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS).
const EvictAfter = 120 * time.Second

// Shards is the number of shards the slots are split over, as Kafka's
// NumFetchSessionCacheShards.
const Shards = 8

// NextEpoch is the epoch that follows e: FinalEpoch stays, the largest
// wraps to 1.
func NextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return e
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}

// Key names a partition in a session: by topic id in a session opened at
// fetch v13+ (Topic empty), by name before (TopicID zero).
type Key struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
}

// Partition is what a fetch asks of one partition.
type Partition struct {
	Key
	// Name is the topic's name, also for a key by id ("" when the id is
	// unknown).
	Name               string
	FetchOffset        int64
	LogStartOffset     int64 // the fetcher's (a follower's) log start
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// Answer is what a fetch answered for one partition: what decides
// whether an incremental answer must carry it.
type Answer struct {
	Records              bool // any record bytes
	HighWatermark        int64
	LogStartOffset       int64
	PreferredReadReplica int32
	ErrorCode            int16
	DivergingEpoch       bool
}

// cached is a session's partition: the last fetch asked and what was
// last answered.
type cached struct {
	Partition
	hw       int64 // -1 after an error, so that the next answer carries it
	logStart int64 // our log start offset last answered
	gone     bool  // forgotten, dropped from order at the end of the update
	moved    bool  // answered records: goes to the end of order
	// handle is the broker's (Context.Handle); atomic, as fetches of the
	// session may overlap.
	handle atomic.Pointer[Handle]
}

// Handle is what the broker keeps with a session's partition so that
// later fetches find the partition without looking it up; Stamp tells
// the broker whether it is still current.
type Handle struct {
	Value any
	Stamp [2]int64
}

// changed is Kafka's rule for an incremental answer: a partition is
// carried when it has records, a new high watermark or log start offset,
// a preferred read replica, an error or a diverging epoch. update takes
// the answer into the cache.
func (c *cached) changed(a Answer, update bool) bool {
	must := a.Records || a.PreferredReadReplica >= 0 || a.DivergingEpoch
	if c.hw != a.HighWatermark {
		must = true
		if update {
			c.hw = a.HighWatermark
		}
	}
	if c.logStart != a.LogStartOffset {
		must = true
		if update {
			c.logStart = a.LogStartOffset
		}
	}
	if a.ErrorCode != 0 {
		must = true
		if update {
			c.hw = -1
		}
	}
	return must
}

// session is one fetch session; its shard's mutex guards it.
type session struct {
	id         int32
	epoch      int32 // the epoch the next incremental fetch must carry
	privileged bool  // a follower's
	usesIDs    bool  // opened at fetch v13+: keyed by topic id
	created    time.Time
	lastUsed   time.Time
	parts      map[Key]*cached
	order      []*cached // the order fetches read the partitions in
	// size, evictableByAll and evictableByPrivileged are set by touch
	// (Kafka's cachedSize and evictable trees).
	size                  int
	evictableByAll        bool
	evictableByPrivileged bool
}

// shard is a share of the cache with its own range of ids.
type shard struct {
	mu         sync.Mutex
	num        int32
	idRange    int32
	max        int
	sessions   map[int32]*session
	partitions int64 // cached partitions over sessions, as of their last touch
}

// Cache is the broker's fetch session cache.
type Cache struct {
	shards     []*shard
	next       atomic.Uint32 // round-robin over shards for new sessions
	evictAfter time.Duration
	evictions  atomic.Uint64
}

// New is a cache of slots sessions over shards shards (Shards for the
// broker; tests may use 1), evicting after evictAfter (EvictAfter).
func New(slots, shards int, evictAfter time.Duration) *Cache {
	shards = max(shards, 1)
	c := &Cache{evictAfter: evictAfter}
	idRange := int32(math.MaxInt32 / shards)
	for i := range shards {
		c.shards = append(c.shards, &shard{num: int32(i), idRange: idRange, max: slots / shards, sessions: map[int32]*session{}})
	}
	return c
}

// Sessions is the number of sessions cached.
func (c *Cache) Sessions() int {
	n := 0
	for _, s := range c.shards {
		s.mu.Lock()
		n += len(s.sessions)
		s.mu.Unlock()
	}
	return n
}

// Partitions is the number of partitions cached over all sessions.
func (c *Cache) Partitions() int64 {
	var n int64
	for _, s := range c.shards {
		s.mu.Lock()
		n += s.partitions
		s.mu.Unlock()
	}
	return n
}

// Evictions is the number of sessions evicted so far.
func (c *Cache) Evictions() uint64 { return c.evictions.Load() }

// shardOf is the shard that hands out id.
func (c *Cache) shardOf(id int32) *shard {
	i := int(id / c.shards[0].idRange)
	if id <= 0 || i >= len(c.shards) {
		return nil
	}
	return c.shards[i]
}

// newID is a free id of the shard's range, never InvalidSessionID.
func (s *shard) newID() int32 {
	lo, hi := max(1, s.num*s.idRange), (s.num+1)*s.idRange
	for {
		id := lo + rand.Int32N(hi-lo)
		if _, taken := s.sessions[id]; !taken {
			return id
		}
	}
}

// create opens a session of parts if there is room or an eviction makes
// some; it returns the id, or InvalidSessionID.
func (c *Cache) create(now time.Time, privileged, usesIDs bool, parts []*cached) int32 {
	s := c.shards[int(c.next.Add(1)-1)%len(c.shards)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) >= s.max && !c.tryEvict(s, privileged, len(parts), now) {
		return InvalidSessionID
	}
	ss := &session{id: s.newID(), epoch: NextEpoch(InitialEpoch), privileged: privileged, usesIDs: usesIDs,
		created: now, parts: make(map[Key]*cached, len(parts)), size: -1}
	for _, p := range parts {
		if _, dup := ss.parts[p.Key]; !dup {
			ss.parts[p.Key] = p
			ss.order = append(ss.order, p)
		}
	}
	s.sessions[ss.id] = ss
	c.touch(s, ss, now)
	return ss.id
}

// evictKey orders sessions by value, as Kafka's EvictableKey: a
// consumer's before a follower's, then by size, then by id.
type evictKey struct {
	privileged bool
	size       int
	id         int32
}

func (a evictKey) less(b evictKey) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if a.size != b.size {
		return a.size < b.size
	}
	return a.id < b.id
}

// tryEvict makes room in s for a new session, as Kafka does: it evicts
// the least recently used session when it is stale (unused longer than
// evictAfter); else the least valuable session evictable by the new one
// (any of a follower's sessions that are not privileged or are old, only
// old non-privileged ones for a consumer; old: created more than
// evictAfter before its last use) if it is worth no more than the new
// one.
func (c *Cache) tryEvict(s *shard, privileged bool, size int, now time.Time) bool {
	var lru, least *session
	for _, ss := range s.sessions {
		if lru == nil || ss.lastUsed.Before(lru.lastUsed) || ss.lastUsed.Equal(lru.lastUsed) && ss.id < lru.id {
			lru = ss
		}
		evictable := ss.evictableByAll
		if privileged {
			evictable = ss.evictableByPrivileged
		}
		if evictable && (least == nil || ss.evictKey().less(least.evictKey())) {
			least = ss
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > c.evictAfter:
		s.remove(lru)
	case least == nil || (evictKey{privileged, size, 0}).less(least.evictKey()):
		return false
	default:
		s.remove(least)
	}
	c.evictions.Add(1)
	return true
}

func (ss *session) evictKey() evictKey { return evictKey{ss.privileged, ss.size, ss.id} }

// touch marks ss used at now and refreshes its size and evictability.
func (c *Cache) touch(s *shard, ss *session, now time.Time) {
	ss.lastUsed = now
	if ss.size >= 0 {
		s.partitions -= int64(ss.size)
	}
	ss.size = len(ss.parts)
	s.partitions += int64(ss.size)
	old := now.Sub(ss.created) > c.evictAfter
	ss.evictableByPrivileged = !ss.privileged || old
	ss.evictableByAll = old
}

// remove drops ss from the shard.
func (s *shard) remove(ss *session) {
	if s.sessions[ss.id] != ss {
		return
	}
	delete(s.sessions, ss.id)
	s.partitions -= int64(ss.size)
}

// Remove closes session id, if cached; it reports whether it was.
func (c *Cache) Remove(id int32) bool {
	s := c.shardOf(id)
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	if ok {
		s.remove(ss)
	}
	return ok
}
