package compaction

import (
	"hash/maphash"
	"math"
	"math/bits"
)

// slotSize is the memory of one offset map slot: a 96-bit key hash and a
// 32-bit offset relative to the pass's first dirty offset (Kafka's
// SkimpyOffsetMap stores an MD5 and an 8-byte offset in 24 bytes; 16 bytes
// put four slots in a cache line, which is what the cleaner waits on).
const slotSize = 16

// maxSpan is the largest dirty range, in offsets, one pass can map.
const maxSpan = math.MaxUint32

// loadFactor bounds how full the table may get; linear probing stays
// short below it.
const loadFactor = 0.75

// initialSlots is the table size a map starts with; it doubles as keys
// arrive, up to what the buffer affords.
const initialSlots = 1 << 14

// slot is one entry of the offset map; h2 == 0 marks a free slot.
type slot struct {
	h1  uint64
	h2  uint32
	rel uint32 // offset - offsetMap.base
}

// offsetMap maps the 96-bit hash of a key to the offset of the key's
// latest record in the dirty range. Its table grows by doubling up to the
// cleaner thread's share of log.cleaner.dedupe.buffer.size and never
// beyond: a small log uses little memory (and a table that fits the CPU
// caches), a large one at most the buffer. Keys are not stored, so two
// keys colliding in all 96 bits would be merged, which even for a billion
// keys has a chance of about 1e-11. Not safe for concurrent use:
// each cleaner thread owns one, and keeps its table between passes.
type offsetMap struct {
	maxSlots int
	slots    []slot
	used     int
	limit    int    // entries before the table must grow
	base     int64  // offsets are stored relative to it
	sink     uint32 // keeps touch's loads from being optimized away
	s1, s2   maphash.Seed
}

// newOffsetMap makes a map whose table uses at most bufferBytes.
func newOffsetMap(bufferBytes int64) *offsetMap {
	return &offsetMap{maxSlots: int(max(bufferBytes/slotSize, 16)), s1: maphash.MakeSeed(), s2: maphash.MakeSeed()}
}

// capacity is the most keys the map can hold.
func (m *offsetMap) capacity() int { return int(float64(m.maxSlots) * loadFactor) }

// reset empties the map for a new pass mapping offsets from base on,
// keeping its table.
func (m *offsetMap) reset(base int64) {
	m.base = base
	if m.slots == nil {
		m.slots = make([]slot, min(initialSlots, m.maxSlots))
	} else {
		clear(m.slots)
	}
	m.used = 0
	m.limit = int(float64(len(m.slots)) * loadFactor)
}

// room reports whether n more keys surely fit.
func (m *offsetMap) room(n int) bool { return m.used+n <= m.capacity() }

// keyHash is the 96-bit hash of a key; h2 is never zero.
type keyHash struct {
	h1 uint64
	h2 uint32
}

// hash is the hash of key.
func (m *offsetMap) hash(key []byte) keyHash {
	return keyHash{maphash.Bytes(m.s1, key), uint32(maphash.Bytes(m.s2, key)) | 1}
}

// home is the slot where a probe for h starts.
func (m *offsetMap) home(h keyHash) int {
	hi, _ := bits.Mul64(h.h1, uint64(len(m.slots)))
	return int(hi)
}

// touch loads the home slots of hs, which the CPU can do for many keys at
// once since the loads do not depend on each other: the look-ups of a
// batch's keys then find their slots in the cache instead of waiting for
// memory one key at a time (the table is usually larger than the caches).
func (m *offsetMap) touch(hs []keyHash) {
	var sink uint32
	for _, h := range hs {
		sink ^= m.slots[m.home(h)].h2
	}
	m.sink = sink
}

// find returns the index of the slot holding h, or of the free slot
// where it would go.
func (m *offsetMap) find(h keyHash) int {
	i := m.home(h)
	for {
		s := &m.slots[i]
		if s.h2 == 0 || (s.h1 == h.h1 && s.h2 == h.h2) {
			return i
		}
		if i++; i == len(m.slots) {
			i = 0
		}
	}
}

// put records off (in [base, base+maxSpan)) as the latest offset of the
// key hashed to h; it is false (and nothing is stored) when the key is new
// and the map is full.
func (m *offsetMap) put(h keyHash, off int64) bool {
	s := &m.slots[m.find(h)]
	if s.h2 == 0 {
		if m.used >= m.limit {
			if len(m.slots) >= m.maxSlots {
				return false
			}
			m.grow()
			s = &m.slots[m.find(h)]
		}
		m.used++
		s.h1, s.h2 = h.h1, h.h2
	}
	s.rel = uint32(off - m.base)
	return true
}

// grow doubles the table (up to maxSlots) and rehashes it.
func (m *offsetMap) grow() {
	old := m.slots
	m.slots = make([]slot, min(2*len(old), m.maxSlots))
	m.limit = int(float64(len(m.slots)) * loadFactor)
	for _, s := range old {
		if s.h2 != 0 {
			m.slots[m.find(keyHash{s.h1, s.h2})] = s
		}
	}
}

// get returns the latest offset recorded for the key hashed to h.
func (m *offsetMap) get(h keyHash) (int64, bool) {
	if m.used == 0 {
		return 0, false
	}
	s := &m.slots[m.find(h)]
	if s.h2 == 0 {
		return 0, false
	}
	return m.base + int64(s.rel), true
}
