package segment

import (
	"os"
	"sync/atomic"
)

// Slice is a region of a segment's .log file holding whole batches, to be
// written to a socket (sendfile) or read with ReadAt. The file stays open
// until Release, even if the segment is closed or deleted meanwhile. The
// zero Slice is empty and needs no Release.
//
// A Slice of the active segment can be cut short if the log is truncated
// (replication) before it is written; the reader then sees fewer bytes.
type Slice struct {
	File    *os.File
	Pos     int64
	Len     int64
	release func()
}

// Release drops the Slice's reference to the file; call it once the bytes
// were written. Calling it again, or on the zero Slice, does nothing.
func (s Slice) Release() {
	if s.release != nil {
		s.release()
	}
}

// fileRef reference-counts an open file: its holder (the segment, or the
// FileCache for a sealed segment) holds one reference, every outstanding
// Slice and read in progress another; the last release closes the file.
type fileRef struct {
	f        *os.File
	writable bool // opened read-write (appends, truncation)
	refs     atomic.Int64
}

func newFileRef(f *os.File, writable bool) *fileRef {
	r := &fileRef{f: f, writable: writable}
	r.refs.Store(1)
	return r
}

// acquire takes a reference; false if the file is already closed.
func (r *fileRef) acquire() bool {
	for {
		n := r.refs.Load()
		if n <= 0 {
			return false
		}
		if r.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference, closing the file with the last one.
func (r *fileRef) release() error {
	if r.refs.Add(-1) == 0 {
		return r.f.Close()
	}
	return nil
}

// slice makes a Slice over [pos, pos+n) that takes over a reference the
// caller acquired.
func (r *fileRef) slice(pos, n int64) Slice {
	var done atomic.Bool
	return Slice{File: r.f, Pos: pos, Len: n, release: func() {
		if done.CompareAndSwap(false, true) {
			_ = r.release()
		}
	}}
}
