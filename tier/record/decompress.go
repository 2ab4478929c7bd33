package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedBytes bounds the decompressed records area of one batch.
// Compressed formats can declare, or expand to, sizes far beyond their
// input; without a bound a few bytes from a client could make the broker
// allocate gigabytes. Exceeding it is ErrTooLarge.
//
// This is why the package decodes with the codec libraries directly
// rather than with kgo.DefaultDecompressor, whose bound is fixed at 2 GiB.
const MaxDecompressedBytes = 128 << 20

// maxDecompressed is the bound in force: MaxDecompressedBytes, a variable
// only so that tests can exercise it with small inputs.
var maxDecompressed = MaxDecompressedBytes

// xerialMagic starts snappy data framed the way the Java client writes it:
// the magic, two int32 versions, then blocks of (int32 length, raw snappy).
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// Pooled stream decoders (each is used by one goroutine at a time).
var (
	gzipReaders sync.Pool // *gzip.Reader
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdReaders = sync.Pool{New: newZstdDecoder}
)

// zstdDecoder owns a decoder, built for the bound max, that is closed when
// the pool drops it.
type zstdDecoder struct {
	dec *zstd.Decoder
	max int
}

func newZstdDecoder() any {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(maxDecompressed)),
		zstd.WithDecoderMaxWindow(uint64(max(maxDecompressed, zstd.MinWindowSize))))
	if err != nil {
		return err // options are valid constants; reported by decompress
	}
	z := &zstdDecoder{dec: dec, max: maxDecompressed}
	runtime.AddCleanup(z, func(d *zstd.Decoder) { d.Close() }, dec)
	return z
}

// decompress returns the decoded records area of a batch compressed with c.
// Malformed input is ErrCorrupt; output over MaxDecompressedBytes is
// ErrTooLarge.
func decompress(c Codec, src []byte) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch c {
	case Gzip:
		out, err = decompressGzip(src)
	case Snappy:
		out, err = decompressSnappy(src)
	case LZ4:
		r := lz4Readers.Get().(*lz4.Reader)
		r.Reset(bytes.NewReader(src))
		out, err = readBounded(r)
		r.Reset(nil)
		lz4Readers.Put(r)
	case Zstd:
		out, err = decompressZstd(src)
	default:
		return nil, fmt.Errorf("unknown compression codec %d: %w", c, ErrCorrupt)
	}
	if err != nil {
		if !errors.Is(err, ErrTooLarge) {
			err = fmt.Errorf("%v: %w", err, ErrCorrupt)
		}
		return nil, fmt.Errorf("decompress %s records: %w", c, err)
	}
	return out, nil
}

func tooLarge() error {
	return fmt.Errorf("records decompress beyond %d bytes: %w", MaxDecompressedBytes, ErrTooLarge)
}

// readBounded reads r to its end, failing past maxDecompressed.
func readBounded(r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, int64(maxDecompressed)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(maxDecompressed) {
		return nil, tooLarge()
	}
	return buf.Bytes(), nil
}

func decompressGzip(src []byte) ([]byte, error) {
	r, _ := gzipReaders.Get().(*gzip.Reader)
	if r == nil {
		r = new(gzip.Reader)
	}
	defer gzipReaders.Put(r)
	if err := r.Reset(bytes.NewReader(src)); err != nil {
		return nil, err
	}
	return readBounded(r)
}

func decompressZstd(src []byte) ([]byte, error) {
	v := zstdReaders.Get()
	z, ok := v.(*zstdDecoder)
	if ok && z.max != maxDecompressed { // the bound changed (tests)
		v = newZstdDecoder()
		z, ok = v.(*zstdDecoder)
	}
	if !ok {
		return nil, fmt.Errorf("zstd decoder: %v", v)
	}
	defer zstdReaders.Put(z)
	out, err := z.dec.DecodeAll(src, nil)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, tooLarge()
	}
	return out, err
}

// decompressSnappy decodes a raw snappy block or xerial-framed blocks,
// checking the declared sizes before allocating for them.
func decompressSnappy(src []byte) ([]byte, error) {
	if len(src) < xerialHeaderSize || !bytes.HasPrefix(src, xerialMagic) {
		n, err := s2.DecodedLen(src)
		if err != nil {
			return nil, err
		}
		if n > maxDecompressed {
			return nil, tooLarge()
		}
		return s2.Decode(nil, src)
	}
	blocks := src[xerialHeaderSize:]
	total := 0
	for rest := blocks; len(rest) > 0; {
		block, next, err := xerialBlock(rest)
		if err != nil {
			return nil, err
		}
		n, err := s2.DecodedLen(block)
		if err != nil {
			return nil, err
		}
		if total += n; total > maxDecompressed {
			return nil, tooLarge()
		}
		rest = next
	}
	dst := make([]byte, 0, total)
	for rest := blocks; len(rest) > 0; {
		block, next, _ := xerialBlock(rest)
		out, err := s2.Decode(dst[len(dst):cap(dst)], block)
		if err != nil {
			return nil, err
		}
		dst = append(dst, out...) // out already sits at dst's end; this only extends
		rest = next
	}
	return dst, nil
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
