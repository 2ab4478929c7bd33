package objstore

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// The helpers below are shared by the implementations so that every backend
// applies the same rules in the same words.

// ValidateKey reports whether key is a valid object key (see the package
// doc), wrapping ErrInvalidKey when it is not.
func ValidateKey(key string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why) }
	switch {
	case key == "":
		return bad("empty")
	case len(key) > MaxKeyLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyLen))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return bad("contains a control character")
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return bad("empty path segment (leading, trailing or double '/')")
		case ".", "..":
			return bad("'.' or '..' path segment")
		}
		if len(seg) > MaxSegmentLen {
			return bad(fmt.Sprintf("path segment longer than %d bytes", MaxSegmentLen))
		}
	}
	return nil
}

// CheckRange validates the arguments of GetRange that do not depend on the
// object, wrapping ErrInvalidRange.
func CheckRange(off, n int64) error {
	if off < 0 || n < -1 {
		return fmt.Errorf("%w: offset %d, length %d", ErrInvalidRange, off, n)
	}
	return nil
}

// ClampRange returns how many bytes GetRange(off, n) yields from an object
// of size bytes: n = -1 and ranges past the end are cut at the end, and off
// past the end fails with ErrInvalidRange.
func ClampRange(off, n, size int64) (int64, error) {
	if err := CheckRange(off, n); err != nil {
		return 0, err
	}
	if off > size {
		return 0, fmt.Errorf("%w: offset %d past the end of a %d-byte object", ErrInvalidRange, off, size)
	}
	if n == -1 || n > size-off {
		n = size - off
	}
	return n, nil
}

// ReadAtSeeker is a body that can be read in parallel parts without
// buffering (an *os.File, an *io.SectionReader).
type ReadAtSeeker interface {
	io.ReaderAt
	io.Seeker
}

// SizedBody returns a reader of exactly size bytes of body, failing with
// ErrSizeMismatch if body is shorter or longer. For a ReadAtSeeker it checks
// the length up front and returns an *io.SectionReader over the remaining
// bytes (so backends can read parts in parallel); any other body is wrapped
// in a reader that reports the mismatch when it is reached.
func SizedBody(body io.Reader, size int64) (io.Reader, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: negative size %d", ErrSizeMismatch, size)
	}
	if ras, ok := body.(ReadAtSeeker); ok {
		cur, err := ras.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, fmt.Errorf("objstore: seek body: %w", err)
		}
		end, err := ras.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, fmt.Errorf("objstore: seek body: %w", err)
		}
		if _, err := ras.Seek(cur, io.SeekStart); err != nil {
			return nil, fmt.Errorf("objstore: seek body: %w", err)
		}
		if end-cur != size {
			return nil, fmt.Errorf("%w: body has %d bytes, size is %d", ErrSizeMismatch, end-cur, size)
		}
		return io.NewSectionReader(ras, cur, size), nil
	}
	return &exactReader{r: body, left: size, size: size}, nil
}

// exactReader passes through exactly size bytes of r and fails with
// ErrSizeMismatch instead of returning io.EOF when r is shorter or longer.
type exactReader struct {
	r          io.Reader
	left, size int64
	err        error // sticky
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.left == 0 {
		// Probe for bytes beyond size; a well-behaved body says EOF now.
		var one [1]byte
		n, err := io.ReadFull(e.r, one[:])
		switch {
		case n > 0:
			e.err = fmt.Errorf("%w: body is longer than %d bytes", ErrSizeMismatch, e.size)
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			e.err = io.EOF
		default:
			e.err = fmt.Errorf("objstore: read body: %w", err)
		}
		return 0, e.err
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	switch {
	case err == io.EOF && e.left > 0:
		e.err = fmt.Errorf("%w: body ended after %d of %d bytes", ErrSizeMismatch, e.size-e.left, e.size)
		return n, e.err
	case err == io.EOF:
		return n, nil // the probe on the next call decides
	case err != nil:
		e.err = fmt.Errorf("objstore: read body: %w", err)
		return n, e.err
	}
	return n, nil
}
