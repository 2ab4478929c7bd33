package perf

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: each power-of-two range of
// durations is split into 2^subBits buckets, so a recorded value is off by
// at most 1/2^subBits (≈ 1.6 %) of itself.
const subBits = 6

const (
	subCount   = 1 << subBits
	numBuckets = (64-subBits)*subCount + subCount
)

// Histogram records durations in log-linear buckets (like HdrHistogram, at
// fixed ≈ 1.6 % precision) so that percentiles of millions of samples cost
// a fixed 30 KiB. The zero value is empty and ready to use. It is not safe
// for concurrent use.
type Histogram struct {
	counts   [numBuckets]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

// bucketOf maps a non-negative value to its bucket: values below
// 2·subCount have a bucket each; above, the top subBits+1 bits select it.
func bucketOf(v uint64) int {
	if v < 2*subCount {
		return int(v)
	}
	shift := bits.Len64(v) - (subBits + 1)
	return shift*subCount + int(v>>uint(shift))
}

// bucketValue is the midpoint of bucket i, the value reported for it.
func bucketValue(i int) uint64 {
	if i < 2*subCount {
		return uint64(i)
	}
	shift := i/subCount - 1
	top := uint64(i%subCount + subCount)
	return top<<uint(shift) + (uint64(1)<<uint(shift))/2
}

// Record adds one sample; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += d
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of samples recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest sample recorded (exact), or 0 when empty.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the average sample (exact), or 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) with the histogram's
// precision, clamped to the exact min and max; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	switch {
	case q <= 0 || math.IsNaN(q):
		return h.min
	case q >= 1:
		return h.max
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := time.Duration(bucketValue(i))
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}
