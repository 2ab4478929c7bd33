package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// MaxDecompressedBytes bounds the decompressed records area of one batch
// wherever no smaller limit (a topic's max.message.bytes) applies.
// Compressed formats can declare, or expand to, sizes far beyond their
// input; without a bound a few bytes from a client could make the broker
// allocate gigabytes. Exceeding it is ErrTooLarge.
//
// This is why the package decodes with the codec libraries directly
// rather than with kgo.DefaultDecompressor, whose bound is fixed at 2 GiB.
const MaxDecompressedBytes = 128 << 20

// zstdWindowFloor is the zstd window accepted whatever the output limit:
// a frame written as a stream (Java's zstd-jni, which does not declare the
// content size) carries its compression level's window, up to 8 MiB at
// level 19, however little it holds. A larger window is accepted only up
// to the output limit, since the decoder allocates the whole window.
const zstdWindowFloor = 8 << 20

// readBufferSize is the size of the buffer Validate reads decompressed
// records through.
const readBufferSize = 64 << 10

// keepSnappyBuffer is the largest decoded snappy block buffer a slot keeps
// for its next user; a larger one (a raw snappy batch of several MiB) is
// dropped after use.
const keepSnappyBuffer = 1 << 20

// xerialMagic starts snappy data framed the way the Java client writes it:
// the magic, two int32 versions, then blocks of (int32 length, raw snappy).
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// snappyMaxExpansion bounds how many times its size a snappy block decodes
// to: its densest element is a 3-byte copy of 64 bytes. (S2, which the
// decoder also reads, can expand further; no Kafka client writes it.)
const snappyMaxExpansion = 22

// slots bounds how many batches the process decompresses at once, so that
// N producers (or cleaner threads) cannot have N decompressions in flight:
// there is one slot per CPU, which is all the parallelism decompression
// can use. A slot owns the decoders and buffers its holder uses. They are
// all built here, at package initialisation: the zstd decoder holds a
// channel, and a channel made inside a testing/synctest bubble must never
// be used outside it, which a lazily built, shared decoder could be.
var slots = newSlots(max(runtime.GOMAXPROCS(0), 1))

// slot is one unit of decompression capacity with its reusable state.
type slot struct {
	src    bytes.Reader // the compressed records area
	gzip   gzip.Reader
	lz4    lz4Reader
	zstd   *zstd.Decoder
	window uint64 // the zstd decoder's current window bound
	snappy snappyReader
	out    limitReader
	buf    []byte // Validate's read buffer
}

func newSlots(n int) chan *slot {
	ch := make(chan *slot, n)
	for range n {
		dec, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(MaxDecompressedBytes),
			zstd.WithDecoderMaxWindow(zstdWindowFloor))
		if err != nil {
			panic(fmt.Sprintf("record: zstd decoder: %v", err)) // constant, valid options
		}
		ch <- &slot{zstd: dec, window: zstdWindowFloor, buf: make([]byte, readBufferSize)}
	}
	return ch
}

// acquire takes a slot, waiting for one to be free.
func acquire() *slot { return <-slots }

// release drops the slot's references to the last batch and returns it.
func (s *slot) release() {
	s.src.Reset(nil)
	s.lz4.release()
	_ = s.zstd.Reset(nil) // only fails on a closed decoder
	s.snappy.release()
	s.out = limitReader{}
	slots <- s
}

// open returns a reader of the decompressed records area src, compressed
// with c, that fails with ErrTooLarge past limit bytes and with ErrCorrupt
// on malformed data. It is valid until the slot is released.
func (s *slot) open(c Codec, src []byte, limit int) (*limitReader, error) {
	s.src.Reset(src)
	var r io.Reader
	switch c {
	case Gzip:
		if err := s.gzip.Reset(&s.src); err != nil {
			return nil, codecError(err)
		}
		r = &s.gzip
	case Snappy:
		s.snappy.reset(src, limit)
		r = &s.snappy
	case LZ4:
		s.lz4.reset(src, limit)
		r = &s.lz4
	case Zstd:
		window := uint64(min(max(limit, zstdWindowFloor), MaxDecompressedBytes))
		var err error
		if window != s.window {
			err = s.zstd.ResetWithOptions(&s.src, zstd.WithDecoderMaxWindow(window))
			s.window = window
		} else {
			err = s.zstd.Reset(&s.src)
		}
		if err != nil {
			return nil, codecError(err)
		}
		r = s.zstd
	default:
		return nil, fmt.Errorf("unknown compression codec %d: %w", c, ErrCorrupt)
	}
	s.out = limitReader{r: r, limit: limit}
	return &s.out, nil
}

// decompress returns the decoded records area of a batch compressed with
// c, in memory of its own. Malformed input is ErrCorrupt; output over
// limit bytes is ErrTooLarge.
func decompress(c Codec, src []byte, limit int) ([]byte, error) {
	s := acquire()
	defer s.release()
	r, err := s.open(c, src, limit)
	if err != nil {
		return nil, fmt.Errorf("decompress %s records: %w", c, err)
	}
	var out bytes.Buffer
	out.Grow(min(limit, 4*len(src)) + bytes.MinRead)
	if _, err := out.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("decompress %s records: %w", c, err)
	}
	return out.Bytes(), nil
}

// piecer is a decoder that hands out its decoded data in place, sparing a
// copy: lz4Reader and snappyReader.
type piecer interface {
	piece(max int) ([]byte, error)
}

// limitReader passes decompressed data on until limit bytes were read, and
// sorts the codecs' errors into ErrTooLarge and ErrCorrupt.
type limitReader struct {
	r     io.Reader
	limit int
	n     int // bytes read so far
}

// pieces reports whether piece can be used: whether the decoder is a
// piecer.
func (l *limitReader) pieces() bool {
	_, ok := l.r.(piecer)
	return ok
}

// piece is Read for a piecer decoder: up to max bytes in place.
func (l *limitReader) piece(max int) ([]byte, error) {
	room := l.limit - l.n + 1
	if room <= 0 {
		return nil, tooLarge(l.limit)
	}
	p, err := l.r.(piecer).piece(min(max, room))
	l.n += len(p)
	return p, l.check(err)
}

func (l *limitReader) Read(p []byte) (int, error) {
	room := l.limit - l.n + 1 // one byte over the limit tells that it was exceeded
	if room <= 0 {
		return 0, tooLarge(l.limit)
	}
	if len(p) > room {
		p = p[:room]
	}
	n, err := l.r.Read(p)
	l.n += n
	return n, l.check(err)
}

// check sorts the error of a read that brought the total to l.n.
func (l *limitReader) check(err error) error {
	switch {
	case l.n > l.limit:
		return tooLarge(l.limit)
	case err == nil, err == io.EOF:
		return err
	}
	return codecError(err)
}

func tooLarge(limit int) error {
	return fmt.Errorf("records decompress beyond %d bytes: %w", limit, ErrTooLarge)
}

// codecError classifies an error of a decoder: a zstd window or size over
// the bounds is ErrTooLarge, anything else is malformed data.
func codecError(err error) error {
	switch {
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, zstd.ErrWindowSizeExceeded), errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return fmt.Errorf("%v: %w", err, ErrTooLarge)
	}
	return fmt.Errorf("%v: %w", err, ErrCorrupt)
}

// snappyReader decodes a raw snappy block or xerial-framed blocks one
// block at a time, checking each block's declared size before allocating
// for it. Blocks are decoded whole, so a raw snappy batch (one block) is
// held in memory once, within the limit.
type snappyReader struct {
	rest  []byte // compressed blocks not yet decoded
	raw   bool   // rest is one raw block rather than xerial blocks
	buf   []byte // decoded block buffer, reused
	out   []byte // the undelivered part of the current block
	total int    // bytes decoded so far
	limit int
}

func (s *snappyReader) reset(src []byte, limit int) {
	s.limit = limit
	s.raw = len(src) < xerialHeaderSize || !bytes.HasPrefix(src, xerialMagic)
	s.rest = src
	if !s.raw {
		s.rest = src[xerialHeaderSize:]
	}
	s.out, s.total = nil, 0
}

func (s *snappyReader) release() {
	s.rest, s.out = nil, nil
	if cap(s.buf) > keepSnappyBuffer {
		s.buf = nil
	}
}

func (s *snappyReader) Read(p []byte) (int, error) {
	piece, err := s.piece(len(p))
	return copy(p, piece), err
}

// piece returns up to max decoded bytes in place, valid until the next
// call; io.EOF after the last.
func (s *snappyReader) piece(max int) ([]byte, error) {
	for len(s.out) == 0 {
		if len(s.rest) == 0 {
			return nil, io.EOF
		}
		block := s.rest
		if s.raw {
			s.rest = nil
		} else {
			var err error
			if block, s.rest, err = xerialBlock(s.rest); err != nil {
				return nil, err
			}
		}
		n, err := s2.DecodedLen(block)
		if err != nil {
			return nil, err
		}
		// Declared sizes are checked before anything is allocated for
		// them: against what snappy can expand the block to, and the limit.
		if n > snappyMaxExpansion*len(block) {
			return nil, fmt.Errorf("snappy block of %d bytes declares %d", len(block), n)
		}
		if s.total += n; s.total > s.limit {
			return nil, tooLarge(s.limit)
		}
		if cap(s.buf) < n {
			s.buf = make([]byte, n)
		}
		if s.out, err = s2.Decode(s.buf[:n], block); err != nil {
			return nil, err
		}
	}
	n := min(max, len(s.out))
	piece := s.out[:n]
	s.out = s.out[n:]
	return piece, nil
}

// xerialBlock splits the first length-prefixed block off src.
func xerialBlock(src []byte) (block, rest []byte, err error) {
	if len(src) < 4 {
		return nil, nil, errors.New("truncated xerial block length")
	}
	n := binary.BigEndian.Uint32(src)
	if uint64(n) > uint64(len(src)-4) {
		return nil, nil, errors.New("xerial block overruns its data")
	}
	return src[4 : 4+n], src[4+n:], nil
}
