package compaction

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// Header fields the cleaner sets after record.Build, which has no option
// for them: the delete-horizon attribute bit and the MaxTimestamp of a
// LogAppendTime batch. Offsets follow the layout in tier/record's doc.
const (
	offCRC            = 17
	offAttributes     = 21
	offMaxTimestamp   = 35
	attrDeleteHorizon = 0x40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// filter decides, batch by batch, what a cleaning pass keeps. It holds
// the pass's state: the offset map of the dirty range, the end of that
// range, the time, the transactions seen and the earliest delete horizon
// kept.
type filter struct {
	m     *offsetMap
	hs    []keyHash // scratch: the key hashes of one batch
	end   int64     // records at or after end are not in the map: kept as they are
	nowMs int64
	// deleteRetentionMs is the topic's delete.retention.ms: a tombstone's
	// or marker's delete horizon is set this far after the pass that
	// first finds it removable.
	deleteRetentionMs int64
	// producerLast and producerEpoch say which batch is an active
	// producer's newest, and its epoch.
	producerLast  func(pid int64) (int64, bool)
	producerEpoch func(pid int64) (int16, bool)
	// maxBatchBytes is the topic's max.message.bytes, which bounds what
	// a batch may decompress to, as on produce.
	maxBatchBytes int

	// txns follows the transactions of the whole pass; entries collects
	// the transaction index entries of the group being cleaned that stay.
	txns    *txnTracker
	entries []segment.AbortedTxn
	// minHorizon is the earliest delete horizon of a kept tombstone or
	// marker batch that a later pass could act on (math.MaxInt64: none).
	minHorizon int64
	stats      *Stats
}

// apply returns what to write for b: b itself when nothing changes, a
// rebuilt batch, or nil to drop it. A batch emptied of records is dropped
// unless it is an active idempotent producer's newest (Kafka's
// RETAIN_EMPTY). b aliases the reader's buffer; a rebuilt batch does not.
func (f *filter) apply(b record.Batch) (record.Batch, error) {
	f.stats.Batches++
	if b.IsControl() {
		return f.applyMarker(b)
	}
	aborted := f.txns.onData(b)
	if b.BaseOffset() >= f.end {
		return b, nil
	}
	if aborted {
		n := int64(b.NumRecords())
		f.stats.RecordsRemoved += n
		f.stats.AbortedRemoved += n
		return f.dropBatch(b)
	}
	recs, err := b.RecordsWithin(f.maxBatchBytes)
	if err != nil {
		return nil, fmt.Errorf("decode batch at offset %d: %w", b.BaseOffset(), err)
	}
	f.stats.Records += int64(len(recs))
	horizonSet := b.HasDeleteHorizon()
	horizon := int64(math.MaxInt64)
	if horizonSet {
		horizon = b.FirstTimestamp()
	}
	if f.m.used > 0 {
		f.hs = hashKeys(f.m, recs, f.hs)
		f.m.touch(f.hs)
	}
	kept, tombstones := recs[:0], 0
	for i, r := range recs {
		off := b.Offset(r)
		if r.Key == nil {
			continue // Kafka's cleaner drops keyless records too
		}
		if f.m.used > 0 {
			if latest, ok := f.m.get(f.hs[i]); ok && latest > off {
				continue
			}
		}
		if r.Value == nil {
			if horizonSet && f.nowMs >= horizon {
				f.stats.TombstonesRemoved++
				continue
			}
			tombstones++
		}
		kept = append(kept, r)
	}
	f.stats.RecordsRemoved += int64(len(recs) - len(kept))
	needHorizon := tombstones > 0 && !horizonSet
	if tombstones > 0 {
		if needHorizon {
			horizon = f.nowMs + f.deleteRetentionMs
		}
		f.minHorizon = min(f.minHorizon, horizon)
	}
	switch {
	case len(kept) == len(recs) && !needHorizon:
		return b, nil
	case len(kept) == 0:
		return f.dropBatch(b)
	}
	f.stats.BatchesRewritten++
	return rebuild(b, kept, tombstones > 0, horizon)
}

// applyMarker is apply for a control batch (a transaction marker), as
// Kafka's cleaner treats markers: one whose transaction still has a batch
// in the log stays, with its index entry if it aborted; one whose
// transaction's batches are all gone gets a delete horizon (now +
// delete.retention.ms), like a tombstone, and a later pass past the
// horizon drops it, so a consumer has that long to read the marker after
// the last of the data.
func (f *filter) applyMarker(b record.Batch) (record.Batch, error) {
	ms, err := f.txns.onControl(b)
	if err != nil {
		return nil, err
	}
	if b.BaseOffset() >= f.end || !ms.discardable {
		if ms.indexed {
			f.entries = append(f.entries, ms.entry)
		}
		return b, nil
	}
	horizon := b.FirstTimestamp()
	switch {
	case b.NumRecords() == 0 || (b.HasDeleteHorizon() && f.nowMs >= horizon):
		out, err := f.dropBatch(b)
		if out == nil && err == nil {
			f.stats.MarkersRemoved++
		}
		return out, err
	case b.HasDeleteHorizon():
		f.minHorizon = min(f.minHorizon, horizon)
		return b, nil
	}
	recs, err := b.Records()
	if err != nil {
		return nil, fmt.Errorf("decode control batch at offset %d: %w", b.BaseOffset(), err)
	}
	horizon = f.nowMs + f.deleteRetentionMs
	f.minHorizon = min(f.minHorizon, horizon)
	f.stats.BatchesRewritten++
	return rebuild(b, recs, true, horizon)
}

// dropBatch is what stays of a batch whose records all go: nothing, or,
// for an active producer's newest data batch, the batch emptied (b itself
// if it already is), and for its newest marker the marker whole, so that
// a replay of the log still learns the producer's epoch from it.
func (f *filter) dropBatch(b record.Batch) (record.Batch, error) {
	switch {
	case !f.isProducerLast(b):
		return nil, nil
	case b.NumRecords() == 0 || b.IsControl():
		return b, nil
	}
	f.stats.BatchesRewritten++
	return emptyBatch(b)
}

// isProducerLast reports whether b is what Kafka keeps (empty if need
// be) of an active idempotent producer: its newest data batch, so that
// its sequence numbers survive in the log, or, when no data batch of its
// current epoch follows, a marker of that epoch, so that the epoch that
// fences older producers survives.
func (f *filter) isProducerLast(b record.Batch) bool {
	if b.ProducerID() < 0 || f.producerLast == nil {
		return false
	}
	last, ok := f.producerLast(b.ProducerID())
	if !b.IsControl() || f.producerEpoch == nil {
		return ok && last == b.LastOffset()
	}
	epoch, active := f.producerEpoch(b.ProducerID())
	return !ok && active && epoch == b.ProducerEpoch()
}

// options is the header of b for record.Build: same offsets, epoch,
// codec, timestamp type, producer fields and transactional and control
// flags.
func options(b record.Batch) record.BuildOptions {
	return record.BuildOptions{
		BaseOffset:           b.BaseOffset(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Codec:                b.Codec(),
		FirstTimestamp:       b.FirstTimestamp(),
		LastOffsetDelta:      b.LastOffsetDelta(),
		LogAppendTime:        b.LogAppendTime(),
		Idempotent:           true,
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
		Transactional:        b.IsTransactional(),
		Control:              b.IsControl(),
	}
}

// rebuild encodes the kept records of b into a batch with b's offsets,
// codec, producer fields and record timestamps. With withHorizon the
// batch carries the delete horizon in its FirstTimestamp (KIP-534) and
// the records' timestamp deltas are rebased on it; a batch whose
// tombstones are all gone loses its horizon and is rebased on its first
// record.
func rebuild(b record.Batch, kept []record.Record, withHorizon bool, horizon int64) (record.Batch, error) {
	opts := options(b)
	base := b.FirstTimestamp()
	switch {
	case withHorizon:
		opts.FirstTimestamp = horizon
	case b.HasDeleteHorizon() && b.LogAppendTime():
		opts.FirstTimestamp = b.MaxTimestamp()
	case b.HasDeleteHorizon():
		opts.FirstTimestamp = base + kept[0].TimestampDelta
	}
	if shift := base - opts.FirstTimestamp; shift != 0 && !b.LogAppendTime() {
		for i := range kept {
			kept[i].TimestampDelta += shift
		}
	}
	out, err := record.Build(opts, kept)
	if err != nil {
		return nil, fmt.Errorf("rebuild batch at offset %d: %w", b.BaseOffset(), err)
	}
	finish(out, b, withHorizon)
	return out, nil
}

// emptyBatch is b without records: its offsets, producer fields and max
// timestamp (as both timestamps), uncompressed, like Kafka's empty
// batches.
func emptyBatch(b record.Batch) (record.Batch, error) {
	opts := options(b)
	opts.Codec = record.None
	opts.FirstTimestamp = b.MaxTimestamp()
	out, err := record.Build(opts, nil)
	if err != nil {
		return nil, fmt.Errorf("empty batch at offset %d: %w", b.BaseOffset(), err)
	}
	finish(out, b, false)
	return out, nil
}

// finish sets what Build cannot: the delete-horizon bit, and for a
// LogAppendTime batch the original MaxTimestamp (its records' time); then
// it recomputes the CRC.
func finish(out, orig record.Batch, withHorizon bool) {
	if withHorizon {
		attrs := binary.BigEndian.Uint16(out[offAttributes:]) | attrDeleteHorizon
		binary.BigEndian.PutUint16(out[offAttributes:], attrs)
	}
	if orig.LogAppendTime() {
		binary.BigEndian.PutUint64(out[offMaxTimestamp:], uint64(orig.MaxTimestamp()))
	}
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
}
