package e2e

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// testRecord makes record i of a partition with a mix of null, empty and
// random keys, values and headers, and an explicit timestamp.
func testRecord(rng *rand.Rand, topic string, p int32, i int, ts time.Time) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: p, Timestamp: ts}
	switch i % 10 {
	case 0: // null key
	case 1:
		r.Key = []byte{}
	default:
		r.Key = fmt.Appendf(nil, "key-%s-%d-%d", topic, p, i)
	}
	switch i % 17 {
	case 0: // null value (tombstone)
	case 1:
		r.Value = []byte{}
	default:
		r.Value = make([]byte, 1+rng.IntN(300))
		for j := range r.Value {
			r.Value[j] = byte(rng.UintN(256))
		}
	}
	if i%3 != 0 {
		r.Headers = []kgo.RecordHeader{
			{Key: "seq", Value: []byte(strconv.Itoa(i))},
			{Key: "empty", Value: []byte{}},
			{Key: "null"},
		}
	}
	return r
}

// TestProduceConsumeManyTopicsAndPartitions produces 3000 records spread
// over 5 topics × 4 partitions and reads every partition back: same order,
// contiguous offsets equal to the acked ones, keys, values, headers and
// timestamps byte-identical (null and empty kept apart).
func TestProduceConsumeManyTopicsAndPartitions(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	const topics, partitions, perPartition = 5, 4, 150
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	want := map[string][][]*kgo.Record{}
	var all []*kgo.Record
	for ti := range topics {
		name := fmt.Sprintf("many-%d", ti)
		harness.CreateTopic(t, adm, name, partitions, nil)
		want[name] = make([][]*kgo.Record, partitions)
	}
	// Interleave topics and partitions so batches and requests mix them.
	for i := range perPartition {
		for ti := range topics {
			name := fmt.Sprintf("many-%d", ti)
			for p := range int32(partitions) {
				r := testRecord(rng, name, p, i, base.Add(time.Duration(i)*time.Millisecond))
				want[name][p] = append(want[name][p], r)
				all = append(all, r)
			}
		}
	}
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, cl, all...)
	for name, parts := range want {
		got := harness.ReadAll(t, b.Addr(), name)
		for p, recs := range parts {
			checkPartition(t, name, int32(p), recs, got[int32(p)])
		}
	}
}

// TestCompressionCodecs produces with every codec and reads the records
// back identical; a raw fetch shows the batches were stored with the
// producer's codec (topic compression.type defaults to "producer").
func TestCompressionCodecs(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int16
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			id := harness.CreateTopic(t, adm, topic, 1, nil)
			cl := b.Client(kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(20*time.Millisecond))
			base := time.Now().Truncate(time.Millisecond)
			var recs []*kgo.Record
			for i := range 400 {
				recs = append(recs, &kgo.Record{
					Topic:     topic,
					Key:       fmt.Appendf(nil, "k%d", i),
					Value:     fmt.Appendf(nil, "value %05d %s", i, strings.Repeat("compressible ", i%40)),
					Headers:   []kgo.RecordHeader{{Key: "codec", Value: []byte(c.name)}},
					Timestamp: base.Add(time.Duration(i) * time.Millisecond),
				})
			}
			produceSync(t, cl, recs...)
			checkPartition(t, topic, 0, recs, harness.ReadAll(t, b.Addr(), topic)[0])

			fp, err := fetchRaw(testCtx(t), cl, topic, id, 0, 0, 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if fp.ErrorCode != 0 {
				t.Fatalf("raw fetch error code %d", fp.ErrorCode)
			}
			batches := decodeBatches(t, fp.RecordBatches)
			if len(batches) == 0 {
				t.Fatalf("raw fetch returned no whole batch (%d bytes)", len(fp.RecordBatches))
			}
			for _, bt := range batches {
				if got := bt.Attributes & 7; got != c.attr {
					t.Fatalf("batch at offset %d stored with codec %d, produced with %d (%s)", bt.FirstOffset, got, c.attr, c.name)
				}
			}
		})
	}
}

// TestSmallSegmentsRoll sets segment.bytes=16384 on a topic, produces about
// 400 KB in small batches and checks that the log rolled into many segment
// files and that reads from the start and from the middle return everything.
func TestSmallSegmentsRoll(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	const topic, n = "small-segments", 3000
	harness.CreateTopic(t, adm, topic, 1, map[string]string{"segment.bytes": "16384"})
	cl := b.Client(kgo.ProducerBatchMaxBytes(4096), kgo.ProducerBatchCompression(kgo.NoCompression()))
	rng := rand.New(rand.NewPCG(3, 4))
	base := time.Now().Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := range n {
		r := testRecord(rng, topic, 0, i, base.Add(time.Duration(i)*time.Millisecond))
		r.Value = fmt.Appendf(nil, "%06d-%s", i, strings.Repeat("x", 100))
		recs = append(recs, r)
	}
	produceSync(t, cl, recs...)
	checkPartition(t, topic, 0, recs, harness.ReadAll(t, b.Addr(), topic)[0])

	var segs []string
	err := filepath.WalkDir(b.Dir(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".log") && strings.Contains(filepath.Base(filepath.Dir(path)), topic) {
			segs = append(segs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk data dir: %v", err)
	}
	if len(segs) < 10 {
		t.Errorf("found %d segment files for ~400 KB with segment.bytes=16384, want ≥ 10: %v", len(segs), segs)
	}

	// Start mid-log: the first record returned must be exactly the one asked for.
	const from = 1234
	mid := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}))
	ctx := testCtx(t)
	next := int64(from)
	for next < n && ctx.Err() == nil {
		mid.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Offset != next {
				t.Fatalf("read from %d: got offset %d, want %d", from, r.Offset, next)
			}
			if err := sameRecord(recs[next], r); err != nil {
				t.Fatalf("read from %d: offset %d: %v", from, next, err)
			}
			next++
		})
	}
	if next != n {
		t.Fatalf("read from %d: stopped at %d of %d: %v", from, next, n, ctx.Err())
	}
}
