package remote

import (
	"cmp"
	"fmt"
	"io"
	"slices"
)

// readAheadChunks is how many chunks past the one just read are fetched
// in the background, so a sequential reader finds them in memory; the
// window runs on into the following copies, so a reader crossing segments
// does not wait on the bucket either. The window is cut to an eighth of
// the memory tier, so that eight sequential readers do not evict each
// other's read-ahead. On loopback MinIO a wider window gains nothing
// measurable once the read-ahead crosses segments (doc/perf.md); 4 leaves
// room for a real bucket's latency.
const readAheadChunks = 4

// readAheadWindow is the read-ahead in chunks for the memory tier's size.
func (r *Reader) readAheadWindow() int64 {
	return max(1, min(readAheadChunks, r.m.opts.MemoryBytes/(8*r.m.opts.ChunkSize)))
}

// readAhead fills the window of chunks from chunk k of seg on in the
// background while reader slots are free: each run of consecutive chunks
// of one copy that are neither cached nor being filled is read with one
// ranged GET on its own goroutine (a GET per chunk would cost the store
// its per-request work again and again). As the window slides one chunk
// at a time, a run is read only once it is half the window, or ends its
// copy, or holds the chunk read next; so a sequential reader's GETs
// cover half a window each. Past the end of seg the window goes on into
// the following copies (from the loaded metadata); a run starting a copy
// also fetches the copy's offset index, which the reads after the copy's
// first one need.
func (r *Reader) readAhead(seg Segment, k int64) {
	size := r.m.opts.ChunkSize
	window := r.readAheadWindow()
	var run []string
	var runSeg Segment
	var runStart int64
	nextSeg, next := seg, k // the chunk read next
	launch := func(copyEnd bool) {
		keys := run
		run = nil
		urgent := runSeg.CopyID == nextSeg.CopyID && runStart == next
		if len(keys) == 0 || len(r.sem) == cap(r.sem) || !(copyEnd || urgent || int64(len(keys))*2 >= window) {
			return // nothing to read, every reader slot busy, or too short yet
		}
		if rs := r.cache.reserve(keys); len(rs) > 0 {
			s, first := runSeg, runStart
			r.bg.Go(func() { r.stream(s, first, rs) })
		}
	}
	for range window {
		if k*size >= seg.Size {
			launch(true)
			following, ok := r.nextCopy(seg)
			if !ok {
				return
			}
			seg, k = following, 0
		}
		key := chunkKey(seg, k)
		switch {
		case r.cache.present(key):
			launch(false)
		case len(run) == 0:
			runSeg, runStart, run = seg, k, []string{key}
		default:
			run = append(run, key)
		}
		k++
	}
	launch(k*size >= seg.Size)
}

// stream fills the reserved chunks of seg from chunk first on, in order,
// from one ranged GET, ending each reservation as soon as its bytes are
// in; whatever is left when the read fails ends with the error (waiting
// readers then fill those chunks themselves).
func (r *Reader) stream(seg Segment, first int64, rs []*reservation) {
	size := r.m.opts.ChunkSize
	off := first * size
	n := min(int64(len(rs))*size, seg.Size-off)
	objKey := dir(seg.Topic, topicID(seg), seg.Partition) + seg.Name() + ".log"
	done := 0
	err := r.readRange(r.ctx, objKey, off, n, func(body io.Reader) error {
		for i, res := range rs {
			at := off + int64(i)*size
			data, err := readChunk(body, objKey, at, min(size, seg.Size-at), res.buf)
			h, _ := r.cache.finish(res, data, err)
			h.release()
			done = i + 1
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && first == 0 {
		// The reads after the copy's first one (at its base offset, which
		// needs none) need its offset index.
		_, err = r.index(r.ctx, seg)
	}
	for _, res := range rs[done:] {
		r.cache.finish(res, nil, fmt.Errorf("remote: read ahead %s: %w", seg.Name(), err))
	}
	if err != nil && r.ctx.Err() == nil {
		r.m.log.Debug("remote: read-ahead failed", "segment", seg.Name(), "chunk", first+int64(done), "err", err)
	}
}

// passBehind tells the cache that a read at position pos of seg moved
// past the chunk before it: the previous chunk of seg, or for a read at
// the start of seg the last chunk of the copy before (see chunkCache.pass).
func (r *Reader) passBehind(seg Segment, pos int64) {
	size := r.m.opts.ChunkSize
	switch k := pos / size; {
	case k > 0:
		r.cache.pass(chunkKey(seg, k-1))
	case pos == 0:
		if prev, ok := r.prevCopy(seg); ok && prev.Size > 0 {
			r.cache.pass(chunkKey(prev, (prev.Size-1)/size))
		}
	}
}

// prevCopy is the finished copy ending right before seg, from the loaded
// metadata.
func (r *Reader) prevCopy(seg Segment) (Segment, bool) {
	segs, _ := r.m.segments(topicID(seg), seg.Partition)
	i, _ := slices.BinarySearchFunc(segs, seg.BaseOffset, func(s Segment, base int64) int { return cmp.Compare(s.BaseOffset, base) })
	for i--; i >= 0 && segs[i].EndOffset >= seg.BaseOffset-1; i-- {
		if segs[i].State == CopyFinished && segs[i].EndOffset == seg.BaseOffset-1 {
			return segs[i], true
		}
	}
	return Segment{}, false
}

// nextCopy is the finished copy starting right after seg, from the loaded
// metadata.
func (r *Reader) nextCopy(seg Segment) (Segment, bool) {
	segs, _ := r.m.segments(topicID(seg), seg.Partition)
	i, _ := slices.BinarySearchFunc(segs, seg.EndOffset+1, func(s Segment, base int64) int { return cmp.Compare(s.BaseOffset, base) })
	for ; i < len(segs) && segs[i].BaseOffset == seg.EndOffset+1; i++ {
		if segs[i].State == CopyFinished {
			return segs[i], true
		}
	}
	return Segment{}, false
}
