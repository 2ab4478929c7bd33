package record

import ("testing";"time")

func TestZZTime(t *testing.T) {
	for _, n := range []int{8 << 20, 32 << 20, 64 << 20} {
		start := time.Now()
		out, err := decompress(Zstd, zstdRLEBomb(n))
		t.Log(n, len(out), err, time.Since(start))
	}
}
