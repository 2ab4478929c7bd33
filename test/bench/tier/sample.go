package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	miniogo "github.com/minio/minio-go/v7"
)

// dirSampler watches the partition directories: when each segment base
// was first seen, when a newer base first appeared (the segment was
// sealed), and the peak bytes of the .log files. Only its goroutine
// touches it until stopped.
type dirSampler struct {
	dirs      []string          // by partition
	seen      []map[int64]bool  // base offsets seen
	sealed    []map[int64]int64 // base → unix ns it was first seen sealed
	peak      []int64           // per partition, max .log bytes
	peakTotal int64             // max over samples of the sum
	errs      int               // failed directory reads (a partition may not exist yet)
}

func newDirSampler(dirs []string) *dirSampler {
	s := &dirSampler{dirs: dirs, peak: make([]int64, len(dirs))}
	for range dirs {
		s.seen = append(s.seen, map[int64]bool{})
		s.sealed = append(s.sealed, map[int64]int64{})
	}
	return s
}

// segmentFiles lists a partition directory's segment .log files (named by
// a 20-digit base offset) with their sizes.
func segmentFiles(dir string) (map[int64]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	for _, e := range ents {
		name := e.Name()
		stem, ok := strings.CutSuffix(name, ".log")
		if !ok || len(stem) != 20 {
			continue
		}
		base, err := strconv.ParseInt(stem, 10, 64)
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // deleted meanwhile
		}
		out[base] = info.Size()
	}
	return out, nil
}

func (s *dirSampler) sample(now time.Time) {
	var total int64
	for p, dir := range s.dirs {
		files, err := segmentFiles(dir)
		if err != nil {
			s.errs++
			continue
		}
		newest, bytes := int64(-1), int64(0)
		for base, size := range files {
			newest = max(newest, base)
			bytes += size
			s.seen[p][base] = true
		}
		for base := range s.seen[p] {
			if _, ok := s.sealed[p][base]; !ok && base < newest {
				s.sealed[p][base] = now.UnixNano()
			}
		}
		s.peak[p] = max(s.peak[p], bytes)
		total += bytes
	}
	s.peakTotal = max(s.peakTotal, total)
}

// remoteSegment is what the bench reads of a manifest.json entry (see
// tier/remote's manifest).
type remoteSegment struct {
	CopyID     string `json:"copy_id"`
	BaseOffset int64  `json:"base_offset"`
	EndOffset  int64  `json:"end_offset"`
	Size       int64  `json:"size"`
}

// manifestSampler reads each partition's manifest.json and notes when each
// base offset first appeared in it (its copy finished). Only its goroutine
// touches it until stopped.
type manifestSampler struct {
	client   *miniogo.Client
	bucket   string
	prefixes []string          // partition key directory, by partition
	finished []map[int64]int64 // base → unix ns first seen finished
	last     [][]remoteSegment // the latest manifest, by partition
	errs     int               // failed reads other than a missing manifest
	lastErr  error             // the latest such failure
}

func newManifestSampler(client *miniogo.Client, bucket string, prefixes []string) *manifestSampler {
	s := &manifestSampler{client: client, bucket: bucket, prefixes: prefixes, last: make([][]remoteSegment, len(prefixes))}
	for range prefixes {
		s.finished = append(s.finished, map[int64]int64{})
	}
	return s
}

// readManifest returns a partition's finished copies (none while no
// manifest exists).
func readManifest(ctx context.Context, client *miniogo.Client, bucket, prefix string) ([]remoteSegment, error) {
	obj, err := client.GetObject(ctx, bucket, prefix+"manifest.json", miniogo.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %smanifest.json: %w", prefix, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		if miniogo.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, nil
		}
		return nil, fmt.Errorf("get %smanifest.json: %w", prefix, err)
	}
	var m struct {
		Segments []remoteSegment `json:"segments"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode %smanifest.json: %w", prefix, err)
	}
	return m.Segments, nil
}

func (s *manifestSampler) sample(ctx context.Context) {
	for p, prefix := range s.prefixes {
		segs, err := readManifest(ctx, s.client, s.bucket, prefix)
		if err != nil {
			if ctx.Err() == nil {
				s.errs++
				s.lastErr = err
			}
			continue
		}
		now := time.Now().UnixNano()
		for _, seg := range segs {
			if _, ok := s.finished[p][seg.BaseOffset]; !ok {
				s.finished[p][seg.BaseOffset] = now
			}
		}
		s.last[p] = segs
	}
}

// sampleEvery calls fn every period in a new goroutine until the returned
// stop is called; stop waits for the goroutine to return.
func sampleEvery(period time.Duration, fn func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			fn(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// partitionDirs are the local directories of the topic's partitions.
func partitionDirs(dataDir, topic string, partitions int) []string {
	out := make([]string, partitions)
	for p := range out {
		out[p] = filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p))
	}
	return out
}
