package remote

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// ErrNotTiered means no finished remote copy holds the offset.
var ErrNotTiered = errors.New("remote: offset not in the tier")

// ErrMetadataUnavailable means a partition's remote-segment metadata could
// not be loaded to answer a read; it is retriable (Kafka answers a read
// whose remote metadata is not ready with REPLICA_NOT_AVAILABLE).
var ErrMetadataUnavailable = errors.New("remote: segment metadata not available")

// ErrCorrupt means a remote object does not hold what its record says.
var ErrCorrupt = errors.New("remote: corrupt remote segment")

// maxIndexes bounds the offset indexes kept in memory.
const maxIndexes = 256

// refreshTimeout bounds a metadata reload on the read path, within the
// caller's context: a request without a deadline of its own does not
// wait on an unreachable metadata store for longer.
const refreshTimeout = 5 * time.Second

// Reader serves cold reads from finished remote copies.
type Reader struct {
	m     *Manager
	sem   chan struct{} // one slot per concurrent object read
	cache *chunkCache

	idxMu sync.Mutex
	idx   map[string][]byte // copy id + suffix → index bytes

	bg     sync.WaitGroup // read-ahead goroutines
	ctx    context.Context
	cancel context.CancelFunc
}

func newReader(m *Manager) (*Reader, error) {
	c, err := newChunkCache(filepath.Clean(m.opts.CacheDir), m.opts.CacheBytes, m.opts.MemoryBytes, m.opts.ChunkSize)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Reader{m: m, sem: make(chan struct{}, m.opts.ReaderThreads), cache: c, idx: map[string][]byte{}, ctx: ctx, cancel: cancel}, nil
}

func (r *Reader) close() error {
	r.cancel()
	r.bg.Wait()
	return r.cache.close()
}

// Slice is a region of a cached chunk holding whole batches, in memory or
// in a chunk-cache file; it satisfies the broker's wire region (Fd,
// Offset, Length, Release, and Mem for the bytes of a chunk in memory).
type Slice struct {
	ref chunkRef
	Pos int64 // the region's start in the chunk
	Len int64
}

// Fd is the file descriptor to sendfile from, for a chunk on disk.
func (s Slice) Fd() uintptr { return s.ref.f.Fd() }

// Mem is the region's bytes when the chunk is in memory.
func (s Slice) Mem() ([]byte, bool) {
	if s.ref.m == nil {
		return nil, false
	}
	return s.ref.m.buf[s.Pos : s.Pos+s.Len], true
}

// Offset is the region's start in its chunk (or chunk file).
func (s Slice) Offset() int64 { return s.Pos }

// Length is the region's length.
func (s Slice) Length() int64 { return s.Len }

// Bytes copies the region's bytes out.
func (s Slice) Bytes() ([]byte, error) {
	b := make([]byte, s.Len)
	if s.Len == 0 {
		return b, nil
	}
	n, err := s.ref.ReadAt(b, s.Pos)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == s.Len) {
		return nil, fmt.Errorf("remote: read slice: %w", err)
	}
	return b, nil
}

// Release lets the chunk go; call once the bytes were written.
func (s Slice) Release() { s.ref.release() }

// Locate returns the finished remote copy holding offset, from the
// partition's cached metadata view: copies are immutable, so a copy the
// view holds is answered without I/O. Only when the view was never loaded,
// or holds no copy of offset and is older than the task interval, is it
// reloaded first (one list of the metadata store, under ctx and at most
// refreshTimeout); a failed reload is ErrMetadataUnavailable, wrapping its
// cause. ErrNotTiered when no finished copy holds offset.
func (r *Reader) Locate(ctx context.Context, id metadata.TopicID, partition int32, offset int64) (Segment, error) {
	r.m.mu.Lock()
	v, ok := r.m.parts[pkey{id, partition}]
	stale := !ok || r.m.opts.Now().Sub(v.loaded) > r.m.opts.Interval
	r.m.mu.Unlock()
	if ok {
		seg, err := covering(v.segs, offset)
		if err == nil || !stale {
			return seg, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	segs, err := r.m.refresh(ctx, id, partition, "")
	if err != nil {
		return Segment{}, fmt.Errorf("%w: %w", ErrMetadataUnavailable, err)
	}
	return covering(segs, offset)
}

// Refresh reloads a partition's metadata view (one list of the metadata
// store); every look-up other than Locate answers from the view only.
func (r *Reader) Refresh(ctx context.Context, id metadata.TopicID, partition int32) error {
	if _, err := r.m.refresh(ctx, id, partition, ""); err != nil {
		return fmt.Errorf("%w: %w", ErrMetadataUnavailable, err)
	}
	return nil
}

// covering finds the finished copy holding offset in segs.
func covering(segs []Segment, offset int64) (Segment, error) {
	for _, s := range segs {
		if s.State == CopyFinished && s.BaseOffset <= offset && offset <= s.EndOffset {
			return s, nil
		}
	}
	return Segment{}, fmt.Errorf("offset %d: %w", offset, ErrNotTiered)
}

// LogStartOffset is the first offset held remotely, from the cached
// metadata view (no I/O); false when nothing is, or the view was never
// loaded.
func (r *Reader) LogStartOffset(id metadata.TopicID, partition int32) (int64, bool) {
	segs, _ := r.m.segments(id, partition)
	fin := finished(segs)
	if len(fin) == 0 {
		return 0, false
	}
	return fin[0].BaseOffset, true
}

// HighestOffset is the last offset held remotely (KIP-1005 latest
// tiered), from the cached metadata view (no I/O); false when nothing is,
// or the view was never loaded.
func (r *Reader) HighestOffset(id metadata.TopicID, partition int32) (int64, bool) {
	segs, _ := r.m.segments(id, partition)
	end, ok := int64(-1), false
	for _, s := range finished(segs) {
		end, ok = max(end, s.EndOffset), true
	}
	return end, ok
}

// EpochForOffset is the leader epoch that wrote offset, from the epochs
// of the finished copy holding it in the cached metadata view (no I/O);
// false when no copy the view holds has it.
func (r *Reader) EpochForOffset(id metadata.TopicID, partition int32, offset int64) (int32, bool) {
	segs, _ := r.m.segments(id, partition)
	seg, err := covering(segs, offset)
	if err != nil {
		return -1, false
	}
	epoch, ok := int32(-1), false
	for _, e := range seg.Epochs {
		if e.StartOffset > offset {
			break
		}
		epoch, ok = e.Epoch, true
	}
	return epoch, ok
}

// Read returns whole batches from the remote copy holding offset (see
// Locate and ReadSegment).
func (r *Reader) Read(ctx context.Context, id metadata.TopicID, partition int32, offset int64, maxBytes int) (Slice, error) {
	seg, err := r.Locate(ctx, id, partition, offset)
	if err != nil {
		return Slice{}, err
	}
	return r.ReadSegment(ctx, seg, offset, maxBytes)
}

// ReadSegment returns whole batches from seg, a finished copy holding
// offset (from Locate): the batch containing offset first, then more up to
// maxBytes (at least one batch). The bytes are a region of a cached chunk,
// in memory or on disk.
func (r *Reader) ReadSegment(ctx context.Context, seg Segment, offset int64, maxBytes int) (Slice, error) {
	if offset < seg.BaseOffset || offset > seg.EndOffset {
		return Slice{}, fmt.Errorf("offset %d outside copy %s: %w", offset, seg.Name(), ErrNotTiered)
	}
	// A read at the copy's base offset (a consumer moving on from the
	// copy before) starts at position 0 and needs no offset index: one
	// request less to the store per copy streamed through.
	pos := int64(0)
	if offset > seg.BaseOffset {
		idx, err := r.index(ctx, seg)
		if err != nil {
			return Slice{}, err
		}
		pos = lookup(idx, offset-seg.BaseOffset)
	}
	cur := &cursor{r: r, seg: seg, ctx: ctx, k: -1}
	defer cur.close()
	r.passBehind(seg, pos)
	// A chunk missing here is read as the start of a run with the chunks
	// after it, rather than alone and then its read-ahead.
	r.readAhead(seg, pos/r.m.opts.ChunkSize)
	hdr := make([]byte, record.HeaderSize)
	batchLen := func(at int64) (int64, int64, error) { // length, last offset
		if at+record.HeaderSize > seg.Size {
			return 0, 0, fmt.Errorf("%w: %s: batch header past the end at %d", ErrCorrupt, seg.Name(), at)
		}
		if err := cur.readAt(hdr, at); err != nil {
			return 0, 0, err
		}
		b := record.Batch(hdr)
		n := int64(b.BatchLength()) + 12
		if n < record.HeaderSize || at+n > seg.Size {
			return 0, 0, fmt.Errorf("%w: %s: bad batch length at %d", ErrCorrupt, seg.Name(), at)
		}
		return n, b.LastOffset(), nil
	}
	for {
		n, last, err := batchLen(pos)
		if err != nil {
			return Slice{}, err
		}
		if last >= offset {
			break
		}
		pos += n
	}
	start, end := pos, pos
	chunkEnd := (start/r.m.opts.ChunkSize + 1) * r.m.opts.ChunkSize
	for end < seg.Size {
		n, _, err := batchLen(end)
		if err != nil {
			return Slice{}, err
		}
		if end > start && (end+n-start > int64(maxBytes) || end+n > chunkEnd) {
			break // stay inside one chunk unless the first batch spans
		}
		end += n
	}
	if end <= chunkEnd {
		h, err := cur.chunk(start / r.m.opts.ChunkSize)
		if err != nil {
			return Slice{}, err
		}
		cur.h = chunkRef{} // handed to the slice
		r.readAhead(seg, start/r.m.opts.ChunkSize+1)
		return Slice{ref: h, Pos: start % r.m.opts.ChunkSize, Len: end - start}, nil
	}
	return r.span(cur, start, end)
}

// span serves a batch that crosses chunks from a span entry of the chunk
// cache holding just that batch, so a repeated read of it (the fetch
// handler warms cold partitions before it builds the response) finds it
// cached too.
func (r *Reader) span(cur *cursor, start, end int64) (Slice, error) {
	key := fmt.Sprintf("%s-s%d", cur.seg.Name(), start)
	h, err := r.cache.open(cur.ctx, key, func(buf []byte) ([]byte, error) {
		if int64(cap(buf)) < end-start {
			buf = make([]byte, end-start)
		}
		buf = buf[:end-start]
		if err := cur.readAt(buf, start); err != nil {
			return nil, err
		}
		return buf, nil
	})
	if err != nil {
		return Slice{}, err
	}
	r.readAhead(cur.seg, end/r.m.opts.ChunkSize+1)
	return Slice{ref: h, Pos: 0, Len: end - start}, nil
}

// cursor reads one segment object through the chunk cache, keeping the
// current chunk open.
type cursor struct {
	r   *Reader
	seg Segment
	ctx context.Context
	k   int64
	h   chunkRef
}

func (c *cursor) close() {
	c.h.release()
	c.h = chunkRef{}
}

// chunk opens chunk k (filling the cache) as the current chunk.
func (c *cursor) chunk(k int64) (chunkRef, error) {
	if c.k == k && c.h.ok() {
		return c.h, nil
	}
	c.close()
	size := c.r.m.opts.ChunkSize
	off := k * size
	n := min(size, c.seg.Size-off)
	key := chunkKey(c.seg, k)
	objKey := dir(c.seg.Topic, topicID(c.seg), c.seg.Partition) + c.seg.Name() + ".log"
	h, err := c.r.cache.open(c.ctx, key, func(buf []byte) ([]byte, error) {
		return c.r.download(c.ctx, objKey, off, n, buf)
	})
	if err != nil {
		return chunkRef{}, err
	}
	c.k, c.h = k, h
	return h, nil
}

// chunkKey names chunk k of a copy's .log object in the cache.
func chunkKey(seg Segment, k int64) string { return fmt.Sprintf("%s-%d", seg.Name(), k) }

// readAt fills b from position pos of the segment, across chunks.
func (c *cursor) readAt(b []byte, pos int64) error {
	size := c.r.m.opts.ChunkSize
	for len(b) > 0 {
		h, err := c.chunk(pos / size)
		if err != nil {
			return err
		}
		n, err := h.ReadAt(b[:min(int64(len(b)), size-pos%size)], pos%size)
		if err != nil && !(errors.Is(err, io.EOF) && n > 0) {
			return fmt.Errorf("remote: read cached chunk: %w", err)
		}
		b, pos = b[n:], pos+int64(n)
	}
	return nil
}

// download reads the n bytes at off of an object into buf (or a new
// buffer when buf has no room), holding a reader slot.
func (r *Reader) download(ctx context.Context, key string, off, n int64, buf []byte) ([]byte, error) {
	err := r.readRange(ctx, key, off, n, func(body io.Reader) error {
		var err error
		buf, err = readChunk(body, key, off, n, buf)
		return err
	})
	if err != nil {
		return nil, err
	}
	return buf, nil
}

// readRange opens the n bytes at off of an object and hands the body to
// read, holding a reader slot throughout.
func (r *Reader) readRange(ctx context.Context, key string, off, n int64, read func(io.Reader) error) error {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.sem }()
	rc, err := r.m.store.GetRange(ctx, key, off, n)
	if err != nil {
		return fmt.Errorf("remote: get %s [%d,+%d): %w", key, off, n, err)
	}
	defer rc.Close()
	return read(rc)
}

// readChunk reads the next n bytes of body (the object key at off) into
// buf, or a new buffer when buf has no room.
func readChunk(body io.Reader, key string, off, n int64, buf []byte) ([]byte, error) {
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	got, err := io.ReadFull(body, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%w: %s: got %d bytes at %d, want %d", ErrCorrupt, key, got, off, n)
	case err != nil:
		return nil, fmt.Errorf("remote: get %s: %w", key, err)
	}
	return buf, nil
}

// index returns a copy's offset index, fetching it once.
func (r *Reader) index(ctx context.Context, seg Segment) ([]byte, error) {
	return r.indexFile(ctx, seg, ".index")
}

// indexFile returns a copy's small object (.index, .timeindex,
// .txnindex or .producers), kept in memory after the first fetch.
func (r *Reader) indexFile(ctx context.Context, seg Segment, suffix string) ([]byte, error) {
	ck := seg.CopyID + suffix
	r.idxMu.Lock()
	b, ok := r.idx[ck]
	r.idxMu.Unlock()
	if ok {
		return b, nil
	}
	key := dir(seg.Topic, topicID(seg), seg.Partition) + seg.Name() + suffix
	err := r.readRange(ctx, key, 0, -1, func(body io.Reader) error {
		var err error
		if b, err = io.ReadAll(body); err != nil {
			return fmt.Errorf("remote: get %s: %w", key, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.idxMu.Lock()
	if len(r.idx) >= maxIndexes {
		for k := range r.idx { // drop an arbitrary one
			delete(r.idx, k)
			break
		}
	}
	r.idx[ck] = b
	r.idxMu.Unlock()
	return b, nil
}

// lookup finds in an offset index (8-byte entries: relative last offset
// of a batch, its position) the position of the last indexed batch
// ending before rel; scanning from there reaches the batch holding rel.
// Zero entries after the first are preallocation padding.
func lookup(idx []byte, rel int64) int64 {
	pos := int64(0)
	for i := 0; i+8 <= len(idx); i += 8 {
		r := int64(binary.BigEndian.Uint32(idx[i:]))
		p := int64(binary.BigEndian.Uint32(idx[i+4:]))
		if i > 0 && r == 0 && p == 0 {
			break
		}
		if r >= rel {
			break
		}
		pos = p
	}
	return pos
}

func topicID(s Segment) metadata.TopicID {
	var id metadata.TopicID
	if b, err := hex.DecodeString(s.TopicID); err == nil && len(b) == len(id) {
		copy(id[:], b)
	}
	return id
}

// CollectAbortedTxns returns the aborted transactions overlapping the
// offsets [from, upTo) from the transaction indexes of the finished
// copies, starting with seg (the copy holding from, from Locate) and going
// on through the later ones, as Kafka's
// RemoteLogManager.collectAbortedTransactions: the search stops at the
// first index whose search is complete (segment.CollectAbortedTxns).
// Complete is false when the copies ran out first; the caller goes on in
// the local log. A copy without a .txnindex object (no aborted
// transaction, or copied before transaction indexes were uploaded) holds
// none. Indexes are fetched once and kept in memory like offset indexes.
func (r *Reader) CollectAbortedTxns(ctx context.Context, seg Segment, from, upTo int64) (segment.TxnIndexSearchResult, error) {
	segs, _ := r.m.segments(topicID(seg), seg.Partition)
	var all segment.TxnIndexSearchResult
	for _, s := range finished(segs) {
		if s.EndOffset < seg.BaseOffset || !s.TxnIndex {
			continue
		}
		b, err := r.indexFile(ctx, s, txnIndexSuffix)
		if err != nil {
			return all, err
		}
		x, err := segment.DecodeTxnIndex(b, s.BaseOffset)
		if err != nil {
			return all, fmt.Errorf("%w: %s: %w", ErrCorrupt, s.Name(), err)
		}
		res := x.CollectAbortedTxns(from, upTo)
		all.Aborted = append(all.Aborted, res.Aborted...)
		if res.Complete {
			all.Complete = true
			return all, nil
		}
	}
	return all, nil
}
