package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kgo"
)

// coldSet is the data of the topic that is only in the bucket: per
// partition the copies ending below the local log start.
type coldSet struct {
	keys    []string // .log object keys, partition by partition in offset order
	bytes   int64    // their total size
	lastOff []int64  // per partition, the last cold offset (-1: none)
}

// findColdSet lists the topic's .log objects with minio-go and keeps those
// of finished copies (in manifests) that end below the partition's local
// log start (localStart, by partition).
func findColdSet(ctx context.Context, client *miniogo.Client, bucket string, prefixes []string, manifests [][]remoteSegment, localStart []int64) (coldSet, error) {
	cs := coldSet{lastOff: make([]int64, len(prefixes))}
	for p, prefix := range prefixes {
		cs.lastOff[p] = -1
		cold := map[string]remoteSegment{}
		for _, s := range manifests[p] {
			if s.EndOffset < localStart[p] {
				cold[fmt.Sprintf("%s%020d-%s.log", prefix, s.BaseOffset, s.CopyID)] = s
			}
		}
		var keys []string
		for obj := range client.ListObjects(ctx, bucket, miniogo.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if obj.Err != nil {
				return cs, fmt.Errorf("tier bench: list %s: %w", prefix, obj.Err)
			}
			s, ok := cold[obj.Key]
			if !ok || !strings.HasSuffix(obj.Key, ".log") {
				continue
			}
			if obj.Size != s.Size {
				return cs, fmt.Errorf("tier bench: %s holds %d bytes, its manifest entry %d", obj.Key, obj.Size, s.Size)
			}
			keys = append(keys, obj.Key)
			cs.bytes += obj.Size
			cs.lastOff[p] = max(cs.lastOff[p], s.EndOffset)
		}
		if len(keys) != len(cold) {
			return cs, fmt.Errorf("tier bench: %d of %d cold copies of %s listed", len(keys), len(cold), prefix)
		}
		slices.Sort(keys) // 20-digit base offsets sort numerically
		cs.keys = append(cs.keys, keys...)
	}
	return cs, nil
}

// consumeCold reads every partition of topic from offset 0 up to its last
// cold offset with a franz-go consumer (default fetch sizes) and returns
// the wall time from the first poll, and the part of it until the first
// record arrived.
func consumeCold(ctx context.Context, addr, topic string, cs coldSet) (total, first time.Duration, err error) {
	offsets := map[int32]kgo.Offset{}
	for p, last := range cs.lastOff {
		if last >= 0 {
			offsets[int32(p)] = kgo.NewOffset().At(0)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		return 0, 0, fmt.Errorf("tier bench: consumer: %w", err)
	}
	defer cl.Close()
	start := time.Now()
	for len(offsets) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, 0, fmt.Errorf("tier bench: cold consume: %w", err)
		}
		var ferr error
		fetches.EachError(func(_ string, p int32, err error) {
			ferr = fmt.Errorf("tier bench: cold consume of partition %d: %w", p, err)
		})
		if ferr != nil {
			return 0, 0, ferr
		}
		if first == 0 && !fetches.Empty() {
			first = time.Since(start)
		}
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if len(fp.Records) == 0 {
				return
			}
			if _, open := offsets[fp.Partition]; open && fp.Records[len(fp.Records)-1].Offset >= cs.lastOff[fp.Partition] {
				delete(offsets, fp.Partition)
				cl.PauseFetchPartitions(map[string][]int32{topic: {fp.Partition}})
			}
		})
	}
	return time.Since(start), first, nil
}

// rawGet reads the cold objects one after the other with minio-go GETs
// and returns the wall time.
func rawGet(ctx context.Context, client *miniogo.Client, bucket string, cs coldSet) (time.Duration, error) {
	start := time.Now()
	var n int64
	for _, key := range cs.keys {
		obj, err := client.GetObject(ctx, bucket, key, miniogo.GetObjectOptions{})
		if err != nil {
			return 0, fmt.Errorf("tier bench: get %s: %w", key, err)
		}
		w, err := io.Copy(io.Discard, obj)
		obj.Close()
		if err != nil {
			return 0, fmt.Errorf("tier bench: get %s: %w", key, err)
		}
		n += w
	}
	if n != cs.bytes {
		return 0, fmt.Errorf("tier bench: raw GETs read %d bytes, want %d", n, cs.bytes)
	}
	return time.Since(start), nil
}

// copyLags pairs each sealed segment with its finished copy.
func copyLags(ds *dirSampler, ms *manifestSampler) (lags []time.Duration, missing int) {
	for p := range ds.sealed {
		for base, sealedAt := range ds.sealed[p] {
			done, ok := ms.finished[p][base]
			if !ok {
				missing++
				continue
			}
			lags = append(lags, time.Duration(max(done-sealedAt, 0)))
		}
	}
	slices.Sort(lags)
	return lags, missing
}

// quantile is the q-quantile (nearest rank) of sorted values.
func quantile[T int64 | float64 | time.Duration](sorted []T, q float64) T {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// median of values (the mean of the middle two for an even count).
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	v := slices.Sorted(slices.Values(values))
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

// mbps is MB (2^20 bytes) per second.
func mbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / (1 << 20) / d.Seconds()
}

// ratios divides each of a by the same round's b.
func ratios(a, b []float64) []float64 {
	out := make([]float64, 0, len(a))
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}
