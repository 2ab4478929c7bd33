package local

import (
	"errors"
	"math"

	"github.com/strata-broker/strata/tier/segment"
)

// Sentinel errors.
var (
	// ErrOffsetOutOfRange: a read or deletion outside [LogStartOffset,
	// LogEndOffset] (Kafka's OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("local: offset out of range")
	// ErrClosed: the log was closed or deleted.
	ErrClosed = errors.New("local: log closed")
	// ErrUnexpectedOffset: a follower batch whose offsets do not follow the
	// log end (Kafka's UnexpectedAppendOffsetException).
	ErrUnexpectedOffset = errors.New("local: batch offset does not follow the log end")
	// ErrStorage: the log's files could not be written, synced or
	// truncated (Kafka's KafkaStorageException). It wraps the OS error;
	// with segment.ErrNoSpace the log is unchanged and usable (see the
	// package doc), otherwise the log is failed until reopened.
	ErrStorage = errors.New("local: storage error")
)

// Defaults applied to zero Config fields (Kafka's broker defaults).
const (
	DefaultSegmentBytes           = 1 << 30
	DefaultSegmentMs              = 7 * 24 * 60 * 60 * 1000
	DefaultIndexIntervalBytes     = 4096
	DefaultProducerIDExpirationMs = 24 * 60 * 60 * 1000
)

// Config tunes a partition log; zero fields take the defaults above, and
// the two flush intervals default to "never" (the OS page cache and
// replication provide durability, as in Kafka).
type Config struct {
	// SegmentBytes: roll before the active segment would exceed this size
	// (segment.bytes). Capped at 2 GiB-1 so positions fit the index.
	SegmentBytes int64
	// SegmentMs: roll when the active segment's first batch was appended
	// this long ago by the wall clock (segment.ms).
	SegmentMs int64
	// IndexIntervalBytes: log bytes between offset index entries
	// (index.interval.bytes).
	IndexIntervalBytes int
	// PageCacheWindow: bytes at the end of the active segment kept in the
	// page cache; older ones are dropped from it (see
	// segment.Options.CacheWindow). 0 leaves the cache to the OS.
	PageCacheWindow int64
	// FollowerPageCacheWindow is PageCacheWindow for appends as a
	// follower: a follower's pages are read only once it leads (or by
	// consumers fetching from it, KIP-392), so its cache beyond the tail
	// mostly crowds out the leaders' data.
	FollowerPageCacheWindow int64
	// FlushIntervalMessages: fdatasync once this many messages (offsets)
	// are unflushed (flush.messages).
	FlushIntervalMessages int64
	// FlushIntervalMs: fdatasync on an append when the last flush is this
	// old (flush.ms). Checked on append only; an idle log is flushed by the
	// next roll, Flush or Close.
	FlushIntervalMs int64
	// ProducerIDExpirationMs: idempotent producers without an ongoing
	// transaction whose newest batch or marker is older than this are
	// forgotten when a segment rolls and by ExpireProducers
	// (producer.id.expiration.ms).
	ProducerIDExpirationMs int64
	// Files, shared by the logs of a broker, bounds the open files of
	// their sealed segments (segment.FileCache); nil keeps every
	// segment's file open.
	Files *segment.FileCache
	// SpaceCheck, when set, is asked before an append writes n bytes; an
	// error refuses the append as a full disk would (ErrStorage and
	// segment.ErrNoSpace, nothing written). The broker keeps the last free
	// space of the embedded metadata store's disk this way.
	SpaceCheck func(n int64) error
}

// withDefaults returns c with zero fields replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	c.SegmentBytes = min(c.SegmentBytes, math.MaxInt32)
	if c.SegmentMs <= 0 {
		c.SegmentMs = DefaultSegmentMs
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.FlushIntervalMessages <= 0 {
		c.FlushIntervalMessages = math.MaxInt64
	}
	if c.FlushIntervalMs <= 0 {
		c.FlushIntervalMs = math.MaxInt64
	}
	if c.ProducerIDExpirationMs <= 0 {
		c.ProducerIDExpirationMs = DefaultProducerIDExpirationMs
	}
	return c
}
