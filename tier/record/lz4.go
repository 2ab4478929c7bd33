package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/pierrec/lz4/v4"
)

// LZ4 frame format constants (lz4_Frame_format.md).
const (
	lz4Magic       = 0x184D2204
	lz4FlagVersion = 0xC0 // two bits, must read 01
	lz4FlagIndep   = 0x20 // blocks do not refer to earlier blocks
	lz4FlagBlockCk = 0x10 // each block is followed by its xxh32
	lz4FlagSize    = 0x08 // the content size follows the BD byte
	lz4FlagContent = 0x04 // the end mark is followed by the content's xxh32
	lz4FlagDictID  = 0x01 // a dictionary id follows
	lz4Reserved    = 0x02
	lz4BDReserved  = 0x8F
	lz4Window      = 64 << 10 // how far back a dependent block may refer
	lz4RawBlock    = 1 << 31  // block size flag: stored uncompressed
)

// lz4Reader decodes one LZ4 frame (Kafka's lz4 codec) block by block into
// buffers it keeps across batches. pierrec/lz4's Reader, which the
// package used before, takes two buffers of the frame's maximum block
// size (4 MiB in franz-go's frames) from sync.Pools for every frame; the
// garbage collections of a busy broker empty those pools, and allocating
// 8 MiB per batch cost more than the decoding. pierrec/lz4 still decodes
// the blocks.
//
// Like Kafka's Java reader it takes exactly one frame with no dictionary
// (no legacy or skippable frames, nothing after the frame); like
// franz-go's it verifies every checksum the frame declares.
type lz4Reader struct {
	src         []byte // the frame's bytes not yet consumed
	started     bool   // the frame header was read
	done        bool   // the end mark was read
	flags       byte
	blockMax    int
	contentSize int64 // -1: not declared
	total       int64 // bytes decoded so far
	limit       int
	sum         xxh32  // of the content, when the frame has its checksum
	buf         []byte // a decoded block, reused
	out         []byte // the undelivered part of the current block
	dict        []byte // dependent blocks: the last lz4Window bytes decoded
	dictBuf     []byte // what dict lives in, reused
}

func (r *lz4Reader) reset(src []byte, limit int) {
	*r = lz4Reader{src: src, limit: limit, contentSize: -1, buf: r.buf, dictBuf: r.dictBuf}
}

func (r *lz4Reader) release() {
	r.src, r.out, r.dict = nil, nil, nil
}

func (r *lz4Reader) Read(p []byte) (int, error) {
	piece, err := r.piece(len(p))
	return copy(p, piece), err
}

// piece returns up to max decoded bytes in place, valid until the next
// call; io.EOF after the last. They are hashed for the content checksum
// as they are handed out, while a reader still has them in its cache.
func (r *lz4Reader) piece(max int) ([]byte, error) {
	for len(r.out) == 0 {
		var err error
		switch {
		case r.done:
			return nil, io.EOF
		case !r.started:
			err = r.header()
		default:
			err = r.block()
		}
		if err != nil {
			return nil, err
		}
	}
	n := min(max, len(r.out))
	piece := r.out[:n]
	r.out = r.out[n:]
	if r.flags&lz4FlagContent != 0 {
		r.sum.write(piece)
	}
	return piece, nil
}

var errLZ4Truncated = errors.New("lz4: truncated frame")

// header reads the frame descriptor.
func (r *lz4Reader) header() error {
	src := r.src
	if len(src) < 7 {
		return errLZ4Truncated
	}
	if m := binary.LittleEndian.Uint32(src); m != lz4Magic {
		return fmt.Errorf("lz4: bad magic number %#x", m)
	}
	flg, bd := src[4], src[5]
	switch {
	case flg&lz4FlagVersion != 0x40:
		return fmt.Errorf("lz4: frame version %d", flg>>6)
	case flg&lz4Reserved != 0 || bd&lz4BDReserved != 0:
		return errors.New("lz4: reserved frame descriptor bits set")
	case flg&lz4FlagDictID != 0:
		return errors.New("lz4: frame needs a dictionary")
	}
	idx := int(bd>>4) & 7
	if idx < 4 {
		return fmt.Errorf("lz4: block size index %d", idx)
	}
	r.blockMax = 1 << (8 + 2*idx) // 64 KiB, 256 KiB, 1 MiB, 4 MiB
	desc := 2
	if flg&lz4FlagSize != 0 {
		desc += 8
		if len(src) < 4+desc+1 {
			return errLZ4Truncated
		}
		r.contentSize = int64(binary.LittleEndian.Uint64(src[6:]))
		if r.contentSize < 0 || r.contentSize > int64(r.limit) {
			return tooLarge(r.limit)
		}
	}
	if hc := src[4+desc]; hc != byte(xxh32Sum(src[4:4+desc])>>8) {
		return errors.New("lz4: bad frame descriptor checksum")
	}
	r.flags, r.started, r.src = flg, true, src[4+desc+1:]
	r.sum.reset()
	return nil
}

// block decodes the next block into r.out, or reads the end mark.
func (r *lz4Reader) block() error {
	if len(r.src) < 4 {
		return errLZ4Truncated
	}
	x := binary.LittleEndian.Uint32(r.src)
	r.src = r.src[4:]
	if x == 0 {
		return r.end()
	}
	size := int(x &^ lz4RawBlock)
	if size > r.blockMax || size > len(r.src) {
		return fmt.Errorf("lz4: block of %d bytes (at most %d, %d left)", size, r.blockMax, len(r.src))
	}
	data := r.src[:size]
	r.src = r.src[size:]
	if r.flags&lz4FlagBlockCk != 0 {
		if len(r.src) < 4 {
			return errLZ4Truncated
		}
		if binary.LittleEndian.Uint32(r.src) != xxh32Sum(data) {
			return errors.New("lz4: bad block checksum")
		}
		r.src = r.src[4:]
	}
	if x&lz4RawBlock != 0 {
		r.out = data
	} else {
		// Decoded into at most one byte over the limit: a block that
		// needs more fails, and is too large rather than corrupt.
		room, capped := r.blockMax, false
		if left := int64(r.limit) - r.total + 1; left < int64(room) {
			room, capped = int(max(left, 1)), true
		}
		if cap(r.buf) < room {
			r.buf = make([]byte, room)
		}
		var n int
		var err error
		if r.flags&lz4FlagIndep != 0 {
			n, err = lz4.UncompressBlock(data, r.buf[:room])
		} else {
			n, err = lz4.UncompressBlockWithDict(data, r.buf[:room], r.dict)
		}
		switch {
		case err != nil && capped:
			return tooLarge(r.limit)
		case err != nil:
			return fmt.Errorf("lz4: %w", err)
		}
		r.out = r.buf[:n]
	}
	r.total += int64(len(r.out))
	if r.flags&lz4FlagIndep == 0 {
		r.keep(r.out)
	}
	return nil
}

// end checks what follows the end mark: the content checksum and size,
// and nothing else.
func (r *lz4Reader) end() error {
	if r.flags&lz4FlagContent != 0 {
		if len(r.src) < 4 {
			return errLZ4Truncated
		}
		if binary.LittleEndian.Uint32(r.src) != r.sum.sum() {
			return errors.New("lz4: bad content checksum")
		}
		r.src = r.src[4:]
	}
	switch {
	case r.contentSize >= 0 && r.total != r.contentSize:
		return fmt.Errorf("lz4: frame declares %d bytes, holds %d", r.contentSize, r.total)
	case len(r.src) > 0:
		return fmt.Errorf("lz4: %d bytes after the frame", len(r.src))
	}
	r.done = true
	return nil
}

// keep appends out to the window dependent blocks refer to.
func (r *lz4Reader) keep(out []byte) {
	if r.dictBuf == nil {
		r.dictBuf = make([]byte, lz4Window)
	}
	if len(out) >= lz4Window {
		r.dict = append(r.dictBuf[:0], out[len(out)-lz4Window:]...)
		return
	}
	if drop := len(r.dict) + len(out) - lz4Window; drop > 0 {
		r.dict = r.dictBuf[:copy(r.dictBuf, r.dict[drop:])]
	}
	r.dict = append(r.dictBuf[:len(r.dict)], out...)
}

// xxh32 is the 32-bit xxHash with seed 0, which LZ4 frames use for their
// checksums.
type xxh32 struct {
	v     [4]uint32
	tail  [16]byte
	n     int // bytes in tail
	total uint64
}

const (
	xxhPrime1 uint32 = 2654435761
	xxhPrime2 uint32 = 2246822519
	xxhPrime3 uint32 = 3266489917
	xxhPrime4 uint32 = 668265263
	xxhPrime5 uint32 = 374761393
)

func xxh32Sum(p []byte) uint32 {
	var x xxh32
	x.reset()
	x.write(p)
	return x.sum()
}

// xxhInit are the accumulators' start values for seed 0: prime 1 plus
// prime 2, prime 2, 0 and minus prime 1, modulo 2^32.
var xxhInit = [4]uint32{(2654435761 + 2246822519) % (1 << 32), xxhPrime2, 0, 1<<32 - 2654435761}

func (x *xxh32) reset() {
	*x = xxh32{v: xxhInit}
}

func xxhRound(acc, lane uint32) uint32 {
	return bits.RotateLeft32(acc+lane*xxhPrime2, 13) * xxhPrime1
}

func (x *xxh32) write(p []byte) {
	x.total += uint64(len(p))
	if x.n > 0 {
		k := copy(x.tail[x.n:], p)
		x.n += k
		p = p[k:]
		if x.n < len(x.tail) {
			return
		}
		x.stripes(x.tail[:])
		x.n = 0
	}
	full := len(p) &^ 15
	x.stripes(p[:full])
	x.n = copy(x.tail[:], p[full:])
}

func (x *xxh32) stripes(p []byte) {
	v1, v2, v3, v4 := x.v[0], x.v[1], x.v[2], x.v[3]
	for ; len(p) >= 16; p = p[16:] {
		v1 = xxhRound(v1, binary.LittleEndian.Uint32(p[0:]))
		v2 = xxhRound(v2, binary.LittleEndian.Uint32(p[4:]))
		v3 = xxhRound(v3, binary.LittleEndian.Uint32(p[8:]))
		v4 = xxhRound(v4, binary.LittleEndian.Uint32(p[12:]))
	}
	x.v = [4]uint32{v1, v2, v3, v4}
}

func (x *xxh32) sum() uint32 {
	var h uint32
	if x.total >= 16 {
		h = bits.RotateLeft32(x.v[0], 1) + bits.RotateLeft32(x.v[1], 7) +
			bits.RotateLeft32(x.v[2], 12) + bits.RotateLeft32(x.v[3], 18)
	} else {
		h = xxhPrime5 // the seed, 0, plus prime 5
	}
	h += uint32(x.total)
	p := x.tail[:x.n]
	for ; len(p) >= 4; p = p[4:] {
		h = bits.RotateLeft32(h+binary.LittleEndian.Uint32(p)*xxhPrime3, 17) * xxhPrime4
	}
	for _, c := range p {
		h = bits.RotateLeft32(h+uint32(c)*xxhPrime5, 11) * xxhPrime1
	}
	h ^= h >> 15
	h *= xxhPrime2
	h ^= h >> 13
	h *= xxhPrime3
	h ^= h >> 16
	return h
}
