package perf

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramQuantilesWithinPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	samples := make([]time.Duration, 0, 20000)
	for range 20000 {
		d := time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))
		samples = append(samples, d)
		h.Record(d)
	}
	slices.Sort(samples)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
		exact := samples[int(q*float64(len(samples)))-1]
		got := h.Quantile(q)
		if diff := float64(got-exact) / float64(exact); diff > 0.02 || diff < -0.02 {
			t.Errorf("q%.3f: got %s, exact %s (%.2f%% off)", q, got, exact, diff*100)
		}
	}
	if h.Count() != 20000 || h.Max() != samples[len(samples)-1] {
		t.Errorf("count %d max %s, want 20000 and %s", h.Count(), h.Max(), samples[len(samples)-1])
	}
	if h.Quantile(0) != samples[0] || h.Quantile(1) != h.Max() {
		t.Errorf("q0 %s q1 %s, want min %s and max %s", h.Quantile(0), h.Quantile(1), samples[0], h.Max())
	}
}

func TestHistogramBucketsAreContiguous(t *testing.T) {
	// Every value maps into a bucket whose reported value is within the
	// precision of the value, over the whole int64 range.
	for _, v := range []uint64{0, 1, 127, 128, 129, 1000, 1 << 20, 123456789, 1<<62 + 12345, 1<<63 - 1} {
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("value %d: bucket %d out of range", v, i)
		}
		got := bucketValue(i)
		if diff := float64(got) - float64(v); diff > float64(v)/subCount+1 || -diff > float64(v)/subCount+1 {
			t.Errorf("value %d: bucket %d reports %d", v, i, got)
		}
	}
	for i := 1; i < numBuckets-subCount; i++ {
		if bucketValue(i) <= bucketValue(i-1) {
			t.Fatalf("bucket %d value %d not above bucket %d value %d", i, bucketValue(i), i-1, bucketValue(i-1))
		}
	}
}

func TestHistogramMergeEmptyAndNegative(t *testing.T) {
	var a, b, empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 {
		t.Fatal("empty histogram should report zeros")
	}
	a.Record(-time.Second) // clamps to 0
	a.Record(2 * time.Millisecond)
	b.Record(4 * time.Millisecond)
	a.Merge(&b)
	a.Merge(&empty)
	if a.Count() != 3 || a.Max() != 4*time.Millisecond || a.Mean() != 2*time.Millisecond {
		t.Fatalf("merged: count %d max %s mean %s", a.Count(), a.Max(), a.Mean())
	}
	if a.Quantile(0.1) != 0 {
		t.Fatalf("q0.1 = %s, want 0", a.Quantile(0.1))
	}
}
