package fetchsession

import (
	"errors"
	"slices"
	"time"
)

// Errors of a fetch as a whole; the broker answers them with no
// partitions.
var (
	// ErrSessionNotFound: an incremental fetch names a session the cache
	// does not hold (FETCH_SESSION_ID_NOT_FOUND).
	ErrSessionNotFound = errors.New("fetch session id not found")
	// ErrInvalidEpoch: an incremental fetch's epoch is not the session's
	// next (INVALID_FETCH_SESSION_EPOCH).
	ErrInvalidEpoch = errors.New("invalid fetch session epoch")
	// ErrTopicID: a session opened with topic ids is used by a fetch
	// without, or the other way round (FETCH_SESSION_TOPIC_ID_ERROR).
	ErrTopicID = errors.New("fetch session topic id mismatch")
)

// Kind is how a fetch is served.
type Kind int8

// Kinds of fetch.
const (
	Sessionless Kind = iota // no session: answer every partition asked
	Full                    // answer every partition asked and open a session
	Incremental             // read the session's partitions, answer those that changed
	Failed                  // a session error: answer Err and nothing else
)

// Request is a fetch as the cache sees it.
type Request struct {
	Version   int16
	SessionID int32
	Epoch     int32
	Follower  bool // a follower's fetch: its session is privileged
	Parts     []Partition
	Forgotten []Key
	// Name resolves a topic id to its name (a session by id keeps
	// partitions whose topic was unknown when added); nil: none is.
	Name func(id [16]byte) (string, bool)
}

// Context is one fetch's use of the cache: what to read and, once read,
// what to answer (Respond).
type Context struct {
	Kind Kind
	Err  error // when Failed
	// Parts is what the fetch reads, in order: the request's partitions,
	// or for an incremental fetch all the session's.
	Parts []Partition
	// Answered is, for an incremental fetch, what the session last
	// answered for each of Parts (HighWatermark -1: an error, or never).
	Answered []Answered

	cache    *Cache
	shard    *shard
	session  *session
	entries  []*cached // Parts' entries, for an incremental fetch
	reqEpoch int32
	follower bool
	usesIDs  bool
}

// NewContext interprets a fetch's session fields at now, as Kafka's
// FetchManager.newContext: before v7 and with FinalEpoch the fetch is
// sessionless; epoch InitialEpoch asks for a full fetch opening a session
// (closing the one named); any other epoch continues the named session,
// which must expect that epoch. An incremental fetch updates the
// session's partitions with the ones it names and drops the forgotten
// ones; a session left empty is closed and the fetch is sessionless.
func (c *Cache) NewContext(r Request, now time.Time) *Context {
	x := &Context{cache: c, follower: r.Follower, usesIDs: r.Version >= 13, reqEpoch: r.Epoch, Parts: r.Parts}
	if r.Version < 7 {
		return x // Sessionless
	}
	if r.Epoch == InitialEpoch || r.Epoch == FinalEpoch {
		if r.SessionID != InvalidSessionID {
			c.Remove(r.SessionID)
		}
		if r.Epoch == InitialEpoch {
			x.Kind = Full
		}
		return x
	}
	s := c.shardOf(r.SessionID)
	if s == nil {
		return x.fail(ErrSessionNotFound)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[r.SessionID]
	switch {
	case !ok:
		return x.fail(ErrSessionNotFound)
	case ss.epoch != r.Epoch:
		return x.fail(ErrInvalidEpoch)
	case ss.usesIDs != x.usesIDs:
		return x.fail(ErrTopicID)
	}
	ss.update(r.Parts, r.Forgotten)
	if len(ss.parts) == 0 {
		s.remove(ss)
		return x // Sessionless, with the request's partitions
	}
	c.touch(s, ss, now)
	ss.epoch = NextEpoch(ss.epoch)
	x.Kind, x.shard, x.session = Incremental, s, ss
	x.Parts = make([]Partition, len(ss.order))
	x.Answered = make([]Answered, len(ss.order))
	x.entries = slices.Clone(ss.order)
	for i, p := range ss.order {
		if ss.usesIDs && p.Name == "" && r.Name != nil {
			p.Name, _ = r.Name(p.TopicID)
		}
		x.Parts[i] = p.Partition
		x.Answered[i] = Answered{HighWatermark: p.hw, LogStartOffset: p.logStart}
	}
	return x
}

// Handle is the handle the broker kept with Parts[i] of an incremental
// fetch, nil for none.
func (x *Context) Handle(i int) *Handle { return x.entries[i].handle.Load() }

// SetHandle keeps h with Parts[i] of an incremental fetch, for the
// session's later fetches.
func (x *Context) SetHandle(i int, h *Handle) { x.entries[i].handle.Store(h) }

// Answered is what a session last answered for one of its partitions.
type Answered struct {
	HighWatermark  int64
	LogStartOffset int64
}

func (x *Context) fail(err error) *Context {
	x.Kind, x.Err, x.Parts = Failed, err, nil
	return x
}

// update takes an incremental fetch's partitions: new ones join at the
// end, known ones take the new fetch parameters, forgotten ones leave.
func (ss *session) update(parts []Partition, forgotten []Key) {
	for _, p := range parts {
		if c, ok := ss.parts[p.Key]; ok {
			name := c.Name
			c.Partition = p
			if p.Name == "" {
				c.Name = name
			}
			continue
		}
		c := &cached{Partition: p, hw: -1, logStart: -1}
		ss.parts[p.Key] = c
		ss.order = append(ss.order, c)
	}
	gone := false
	for _, k := range forgotten {
		if c, ok := ss.parts[k]; ok {
			c.gone, gone = true, true
			delete(ss.parts, k)
		}
	}
	if gone {
		kept := ss.order[:0]
		for _, c := range ss.order {
			if !c.gone {
				kept = append(kept, c)
			}
		}
		clear(ss.order[len(kept):])
		ss.order = kept
	}
}

// Respond takes the answers to Parts, in order, at now: answers[j] is
// the answer to Parts[read[j]], or to Parts[j] when read is nil. An
// incremental fetch may leave out partitions whose answer it knows
// unchanged (no records, and the high watermark and log start offset of
// Answered): they stay as they are. It returns the session id the
// response carries, which of the answers it carries (all but for an
// incremental fetch) and an error for the whole response:
// ErrInvalidEpoch when another fetch of the session came in meanwhile
// (then nothing is carried). A full fetch opens its session here, if the
// cache has or can make room; an incremental one takes the answers into
// the session and moves partitions that answered records to the end of
// its order, so that the next fetch reads the others first.
func (x *Context) Respond(read []int, answers []Answer, now time.Time) (id int32, keep []bool, err error) {
	keep = make([]bool, len(answers))
	switch x.Kind {
	case Failed:
		return InvalidSessionID, nil, x.Err
	case Sessionless:
		for i := range keep {
			keep[i] = true
		}
		return InvalidSessionID, keep, nil
	case Full:
		parts := make([]*cached, len(x.Parts))
		for i, p := range x.Parts {
			keep[i] = true
			parts[i] = &cached{Partition: p, hw: answers[i].HighWatermark, logStart: answers[i].LogStartOffset}
		}
		return x.cache.create(now, x.follower, x.usesIDs, parts), keep, nil
	}
	s, ss := x.shard, x.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss.epoch != NextEpoch(x.reqEpoch) {
		return ss.id, nil, ErrInvalidEpoch
	}
	moved := false
	for i, a := range answers {
		j := i
		if read != nil {
			j = read[i]
		}
		c := ss.parts[x.Parts[j].Key]
		if c == nil {
			keep[i] = true
			continue
		}
		keep[i] = c.changed(a, true)
		if keep[i] && a.Records {
			c.moved, moved = true, true
		}
	}
	if moved {
		ss.moveAnsweredToEnd()
	}
	return ss.id, keep, nil
}

// moveAnsweredToEnd moves the partitions marked moved to the end of the
// session's order, keeping the order within both groups.
func (ss *session) moveAnsweredToEnd() {
	order := make([]*cached, 0, len(ss.order))
	var tail []*cached
	for _, c := range ss.order {
		if c.moved {
			c.moved = false
			tail = append(tail, c)
		} else {
			order = append(order, c)
		}
	}
	ss.order = append(order, tail...)
}
