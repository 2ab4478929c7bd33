package compaction

import (
	"hash/maphash"
	"math/bits"
)

// slotSize is the memory of one offset map slot: a 128-bit key hash and
// an offset, as in Kafka's SkimpyOffsetMap (which stores an MD5 and an
// offset).
const slotSize = 24

// loadFactor bounds how full the map may get; linear probing stays short
// below it.
const loadFactor = 0.75

// slot is one entry of the offset map; h1 == h2 == 0 marks a free slot.
type slot struct {
	h1, h2 uint64
	off    int64
}

// offsetMap maps the 128-bit hash of a key to the offset of the key's
// latest record in the dirty range. Its memory is fixed at creation (the
// cleaner thread's share of log.cleaner.dedupe.buffer.size); keys are not
// stored, so two keys colliding in all 128 bits would be merged, which
// for up to billions of keys has a negligible chance. Not safe for
// concurrent use: each cleaner thread owns one.
type offsetMap struct {
	size   int    // slots the buffer affords
	table  []slot // allocated by the first reset
	slots  []slot // table[:n] in use for the current pass
	used   int
	limit  int // entries allowed in slots
	s1, s2 maphash.Seed
}

// newOffsetMap makes a map using at most bufferBytes of memory. The table
// is allocated lazily, by the first reset, and kept for later passes.
func newOffsetMap(bufferBytes int64) *offsetMap {
	n := max(bufferBytes/slotSize, 16)
	return &offsetMap{size: int(n), s1: maphash.MakeSeed(), s2: maphash.MakeSeed()}
}

// capacity is the most entries the map can hold in a pass.
func (m *offsetMap) capacity() int { return int(float64(m.size) * loadFactor) }

// reset empties the map for a pass expecting up to want entries: only
// enough of the table for want is cleared and used, so small logs touch
// little memory.
func (m *offsetMap) reset(want int64) {
	if m.table == nil {
		m.table = make([]slot, m.size)
	}
	n := int64(m.size)
	if need := int64(float64(want)/loadFactor) + 16; need < n {
		n = need
	}
	m.slots = m.table[:n]
	clear(m.slots)
	m.used = 0
	m.limit = int(float64(n) * loadFactor)
}

// room reports whether n more entries fit.
func (m *offsetMap) room(n int) bool { return m.used+n <= m.limit }

// hash is the 128-bit hash of key, never zero.
func (m *offsetMap) hash(key []byte) (uint64, uint64) {
	return maphash.Bytes(m.s1, key), maphash.Bytes(m.s2, key) | 1
}

// find returns the index of key's slot, or of the free slot where it
// would go.
func (m *offsetMap) find(h1, h2 uint64) int {
	hi, _ := bits.Mul64(h1, uint64(len(m.slots)))
	i := int(hi)
	for {
		s := &m.slots[i]
		if (s.h1 == h1 && s.h2 == h2) || (s.h1 == 0 && s.h2 == 0) {
			return i
		}
		if i++; i == len(m.slots) {
			i = 0
		}
	}
}

// put records off as the latest offset of key; it is false (and nothing
// is stored) when the key is new and the map is full.
func (m *offsetMap) put(key []byte, off int64) bool {
	h1, h2 := m.hash(key)
	s := &m.slots[m.find(h1, h2)]
	if s.h2 == 0 {
		if m.used >= m.limit {
			return false
		}
		m.used++
		s.h1, s.h2 = h1, h2
	}
	s.off = off
	return true
}

// get returns the latest offset recorded for key.
func (m *offsetMap) get(key []byte) (int64, bool) {
	if len(m.slots) == 0 {
		return 0, false
	}
	h1, h2 := m.hash(key)
	s := &m.slots[m.find(h1, h2)]
	if s.h2 == 0 {
		return 0, false
	}
	return s.off, true
}
