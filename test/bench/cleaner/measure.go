package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/strata-broker/strata/compaction"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// rewriteCeiling copies the segment files sequentially through a 1 MiB
// buffer into new files, fdatasyncs them and returns the rate in MB/s:
// the fastest a cleaner could go on this machine.
func rewriteCeiling(segs []local.SegmentInfo, dir string) (float64, error) {
	runtime.GC()
	var total int64
	start := time.Now()
	for i, s := range segs {
		n, err := copyFile(s.LogPath, filepath.Join(dir, fmt.Sprintf("ceiling-%d", i)))
		if err != nil {
			return 0, err
		}
		total += n
	}
	elapsed := time.Since(start)
	for i := range segs {
		_ = os.Remove(filepath.Join(dir, fmt.Sprintf("ceiling-%d", i)))
	}
	return float64(total) / elapsed.Seconds() / 1e6, nil
}

// copyDir copies the files of src into a new directory dst.
func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies src to dst and syncs dst.
func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	n, err := io.CopyBuffer(w, in, make([]byte, 1<<20))
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = out.Sync()
	}
	return n, errors.Join(err, out.Close())
}

// startProfile starts a CPU profile into path ("" does nothing) and
// returns the function that stops it.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// sampleEvery is how often measure samples memory use; sampling more
// often slows the measured pass down.
var sampleEvery = 10 * time.Millisecond

// memPeak is the growth of memory use during a measured call.
type memPeak struct {
	heap int64 // Go heap objects
	rss  int64 // resident set
}

// measure runs f while sampling the Go heap and the resident set every
// sampleEvery, and returns their peaks above the values before f. The sampling
// misses spikes shorter than its period.
func measure(f func() (compaction.Stats, error)) (compaction.Stats, memPeak, error) {
	runtime.GC()
	baseHeap, baseRSS := heapBytes(), rssBytes()
	var peak memPeak
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			peak.heap = max(peak.heap, heapBytes()-baseHeap)
			peak.rss = max(peak.rss, rssBytes()-baseRSS)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	st, err := f()
	close(stop)
	<-done
	return st, peak, err
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapBytes is the memory of live and not yet swept Go heap objects.
func heapBytes() int64 {
	metrics.Read(heapSample)
	return int64(heapSample[0].Value.Uint64())
}

// rssBytes is the process's resident set from /proc/self/statm (0 where
// unavailable).
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(data)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// countRecords reads the whole log and counts its records.
func countRecords(l *local.Log) (int64, error) {
	var n int64
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		sl, err := l.Read(off, 8<<20, -1)
		if err != nil {
			return n, err
		}
		buf := make([]byte, sl.Len)
		_, err = sl.File.ReadAt(buf, sl.Pos)
		sl.Release()
		if err != nil {
			return n, err
		}
		bs, err := record.Split(buf)
		if err != nil || len(bs) == 0 {
			return n, fmt.Errorf("read at %d: %d batches, %v", off, len(bs), err)
		}
		for _, b := range bs {
			n += int64(b.NumRecords())
			off = b.LastOffset() + 1
		}
	}
	return n, nil
}
