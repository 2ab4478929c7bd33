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

// ReadFrame reads one size-prefixed frame from r. The size is checked against
// maxSize before any buffer is allocated. When buf has room, the frame is
// read into it instead of a new buffer.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 8 {
		return nil, fmt.Errorf("%w: frame size %d", ErrMalformed, n)
	}
	if n > maxSize {
		return nil, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, maxSize)
	}
	if int32(cap(buf)) >= n {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read frame body: %w", err)
	}
	return buf, nil
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
