package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors returned while reading or decoding a request. Any of them means the
// connection should be closed: the stream can no longer be trusted.
var (
	ErrFrameTooLarge = errors.New("wire: request frame larger than socket.request.max.bytes")
	ErrMalformed     = errors.New("wire: malformed request")
	ErrUnknownAPI    = errors.New("wire: unknown api key")
)

// Header is a parsed request header.
type Header struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string
}

// firstChunk is the most a frame's buffer holds before its bytes arrive.
// A larger frame's buffer doubles each time it fills, so a client that
// announces a large frame holds at most about twice the bytes it sent.
const firstChunk = 64 << 10

// Budget admits the bytes of request frames as they are read, so that
// the memory of the frames being read stays bounded
// (queued.max.request.bytes). Its methods are called by the goroutine
// reading the frame.
type Budget interface {
	// Wait returns once more bytes may be read; reading pauses while it
	// blocks. An error abandons the frame.
	Wait() error
	// Add records n more bytes of the frame read.
	Add(n int)
}

// ReadFrame reads one size-prefixed frame from r. The size is checked
// against maxSize before any buffer is allocated, and the buffer grows as
// the frame's bytes arrive. When buf has room, the frame is read into it
// instead of a new buffer.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
	return ReadFrameWithin(r, maxSize, buf, nil)
}

// ReadFrameWithin is ReadFrame with every read of the frame's body first
// waiting on budget and then counted in it (nil: no budget). On an error
// the bytes counted stay counted; the caller gives them back.
func ReadFrameWithin(r io.Reader, maxSize int32, buf []byte, budget Budget) ([]byte, error) {
	n, err := readSize(r)
	if err != nil {
		return nil, err
	}
	if n < 8 {
		return nil, fmt.Errorf("%w: frame size %d", ErrMalformed, n)
	}
	if n > maxSize {
		return nil, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, maxSize)
	}
	size := int(n)
	var frame []byte
	switch {
	case cap(buf) >= size:
		frame = buf[:size]
	case cap(buf) >= firstChunk:
		frame = buf[:cap(buf)] // a head start: filled first, then grown
	default:
		frame = make([]byte, min(size, firstChunk))
	}
	for got := 0; got < size; {
		if got == len(frame) {
			grown := make([]byte, min(size, 2*len(frame)))
			copy(grown, frame)
			frame = grown
		}
		if budget != nil {
			if err := budget.Wait(); err != nil {
				return nil, fmt.Errorf("read frame body: %w", err)
			}
		}
		k, err := r.Read(frame[got:])
		if budget != nil && k > 0 {
			budget.Add(k)
		}
		got += k
		if err != nil && got < size {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("read frame body: %w", err)
		}
	}
	return frame, nil
}

// peeker is what readSize needs of a *bufio.Reader to read the size
// without a buffer of its own.
type peeker interface {
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
}

// readSize reads a frame's size prefix: io.EOF when r ends before it
// begins, io.ErrUnexpectedEOF when it ends within it.
func readSize(r io.Reader) (int32, error) {
	if p, ok := r.(peeker); ok {
		b, err := p.Peek(4)
		if err != nil {
			if len(b) > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		n := int32(binary.BigEndian.Uint32(b))
		_, _ = p.Discard(4)
		return n, nil
	}
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(sz[:])), nil
}

// ParseHeader splits a frame into its header and the undecoded body. The
// header's tagged-field section is skipped when the version is flexible for
// the key; for versions kmsg does not know, the body is returned as is.
func ParseHeader(frame []byte) (Header, []byte, error) {
	r := kbin.Reader{Src: frame}
	h := Header{Key: r.Int16(), Version: r.Int16(), CorrelationID: r.Int32()}
	if cid := r.NullableString(); cid != nil {
		h.ClientID = *cid
	}
	if !r.Ok() {
		return h, nil, fmt.Errorf("%w: short header", ErrMalformed)
	}
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return h, nil, fmt.Errorf("%w: %d", ErrUnknownAPI, h.Key)
	}
	if h.Version >= 0 && h.Version <= req.MaxVersion() {
		req.SetVersion(h.Version)
		if req.IsFlexible() {
			kmsg.SkipTags(&r)
			if !r.Ok() {
				return h, nil, fmt.Errorf("%w: bad header tags", ErrMalformed)
			}
		}
	}
	return h, r.Src, nil
}

// DecodeBody decodes a request body of the header's key and version.
func DecodeBody(h Header, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownAPI, h.Key)
	}
	if h.Version < 0 || h.Version > req.MaxVersion() {
		return nil, fmt.Errorf("%w: version %d of key %d", ErrMalformed, h.Version, h.Key)
	}
	req.SetVersion(h.Version)
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: key %d v%d: %v", ErrMalformed, h.Key, h.Version, err)
	}
	return req, nil
}
