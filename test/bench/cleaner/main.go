package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/strata-broker/strata/compaction"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// options are the command-line settings.
type options struct {
	size       int64
	keys       int
	valueSize  int
	batch      int
	segment    int64
	dedupe     int64
	codec      string
	dir        string
	keep       bool
	strict     bool
	targetRate float64
	cpuprofile string
	rounds     int
}

func main() {
	o, err := parseFlags()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "cleaner bench:", err)
		os.Exit(1)
	}
}

func parseFlags() (options, error) {
	var o options
	fs := flag.NewFlagSet("cleaner", flag.ContinueOnError)
	fs.Int64Var(&o.size, "size", 256<<20, "bytes of log to write and clean")
	large := fs.Bool("large", false, "clean 1 GiB (sets -size)")
	fs.IntVar(&o.keys, "keys", 100_000, "distinct keys")
	fs.IntVar(&o.valueSize, "value", 1000, "value size in bytes (records of about 1 KiB, as in test/bench)")
	fs.IntVar(&o.batch, "batch", 100, "records per batch")
	fs.Int64Var(&o.segment, "segment", 64<<20, "segment.bytes of the log")
	fs.Int64Var(&o.dedupe, "dedupe", 128<<20, "log.cleaner.dedupe.buffer.size")
	fs.StringVar(&o.codec, "codec", "none", "batch compression: none, gzip, snappy, lz4, zstd")
	fs.StringVar(&o.dir, "dir", "", "directory for the log (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the log directory")
	fs.BoolVar(&o.strict, "strict", false, "exit non-zero when the throughput or memory target is missed")
	fs.Float64Var(&o.targetRate, "target", 0.5, "throughput target as a share of the ceiling")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the first cleaner pass to this file")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds (each on a fresh copy of the log); the best is reported")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return o, err
	}
	if *large {
		o.size = 1 << 30
	}
	if o.keys <= 0 || o.batch <= 0 || o.valueSize < 0 || o.size <= 0 || o.rounds <= 0 {
		return o, errors.New("cleaner bench: -keys, -batch, -size and -rounds must be positive")
	}
	return o, nil
}

// part is the benchmark's compacted partition.
type part struct {
	cfg *config.Topic
	l   *local.Log
}

func (p *part) Config() *config.Topic { return p.cfg }
func (p *part) Log() *local.Log       { return p.l }

func run(o options) error {
	codec, err := parseCodec(o.codec)
	if err != nil {
		return err
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "strata-cleaner-bench-"); err != nil {
			return err
		}
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	fmt.Printf("cleaner bench: %.0f MiB log, %d keys, %d B values, %d records/batch, codec %s, %d MiB segments, dedupe buffer %d MiB, %d rounds, GOMAXPROCS %d, %s\n",
		float64(o.size)/(1<<20), o.keys, o.valueSize, o.batch, codec, o.segment>>20, o.dedupe>>20, o.rounds, runtime.GOMAXPROCS(0), runtime.Version())
	start := time.Now()
	src := filepath.Join(dir, "source")
	records, sealed, err := generateLog(src, o, codec)
	if err != nil {
		return err
	}
	fmt.Printf("  generated %d records (%.0f MiB sealed) in %s\n", records, float64(sealed)/(1<<20), time.Since(start).Round(time.Millisecond))
	var best result
	for r := range o.rounds {
		res, err := round(o, src, filepath.Join(dir, fmt.Sprint("round-", r)), r == 0)
		if err != nil {
			return err
		}
		fmt.Printf("  round %d: ceiling %7.1f MB/s, cleaner %7.1f MB/s (%s), ratio %.2f\n",
			r+1, res.ceiling, res.rate(), res.st.Elapsed.Round(time.Millisecond), res.rate()/res.ceiling)
		best = best.merge(res)
	}
	return report(o, best)
}

// result is what one round measured (or the best of several rounds).
type result struct {
	ceiling  float64 // MB/s
	st       compaction.Stats
	mem      memPeak
	capacity int
	left     int64
}

// rate is the cleaner's throughput in MB/s of dirty log.
func (r result) rate() float64 {
	if r.st.Elapsed <= 0 {
		return 0
	}
	return float64(r.st.DirtyBytes) / r.st.Elapsed.Seconds() / 1e6
}

// merge keeps the best ceiling, the fastest pass and the highest memory.
func (r result) merge(o result) result {
	out := r
	out.ceiling = max(r.ceiling, o.ceiling)
	if r.st.Elapsed == 0 || o.st.Elapsed < r.st.Elapsed {
		out.st = o.st
	}
	out.mem = memPeak{heap: max(r.mem.heap, o.mem.heap), rss: max(r.mem.rss, o.mem.rss)}
	out.capacity, out.left = o.capacity, o.left
	return out
}

// round copies the generated log to dir, measures the ceiling on its
// segments and then one cleaner pass over it.
func round(o options, src, dir string, profile bool) (result, error) {
	defer os.RemoveAll(dir)
	if err := copyDir(src, dir); err != nil {
		return result{}, err
	}
	cfg, err := config.Default().ResolveTopic(map[string]string{
		"cleanup.policy": "compact", "segment.bytes": fmt.Sprint(o.segment)})
	if err != nil {
		return result{}, err
	}
	l, err := local.Open(dir, local.Config{SegmentBytes: o.segment}, slog.New(slog.DiscardHandler))
	if err != nil {
		return result{}, err
	}
	defer l.Close()
	segs := l.Segments()
	// Start both measurements with nothing left to write back.
	syscall.Sync()
	var res result
	if res.ceiling, err = rewriteCeiling(segs[:len(segs)-1], filepath.Dir(dir)); err != nil {
		return res, err
	}
	p := &part{cfg: &cfg, l: l}
	set := compaction.Settings{CleanerEnable: true, CleanerThreads: 1, DedupeBufferSize: o.dedupe,
		Logger: slog.New(slog.DiscardHandler)}
	c := compaction.NewCleaner(set, func() []compaction.Partition { return []compaction.Partition{p} })
	syscall.Sync()
	res.st, res.mem, err = measure(func() (compaction.Stats, error) {
		path := ""
		if profile {
			path = o.cpuprofile
		}
		stop, err := startProfile(path)
		if err != nil {
			return compaction.Stats{}, err
		}
		defer stop()
		return c.Clean(context.Background(), p)
	})
	if err != nil {
		return res, err
	}
	res.capacity = c.MapCapacity()
	res.left, err = countRecords(l)
	return res, err
}

// report prints the best results and checks them.
func report(o options, r result) error {
	rate := r.rate()
	ratio := rate / r.ceiling
	perRecord := time.Duration(0)
	if r.st.Records > 0 {
		perRecord = r.st.Elapsed / time.Duration(r.st.Records)
	}
	fmt.Printf("  best of %d rounds:\n", o.rounds)
	fmt.Printf("  ceiling  (sequential read + rewrite):  %8.1f MB/s\n", r.ceiling)
	fmt.Printf("  cleaner  (%.0f MiB dirty → %.0f MiB):   %8.1f MB/s in %s (%s/record), %d of %d records removed, map capacity %d keys\n",
		float64(r.st.DirtyBytes)/(1<<20), float64(r.st.BytesWritten)/(1<<20), rate, r.st.Elapsed.Round(time.Millisecond), perRecord,
		r.st.RecordsRemoved, r.st.Records, r.capacity)
	fmt.Printf("  ratio    cleaner / ceiling:             %8.2f   (target ≥ %.2f) %s\n", ratio, o.targetRate, verdict(ratio >= o.targetRate))
	fmt.Printf("  memory   peak Go heap +%.1f MiB, peak RSS +%.1f MiB; dedupe buffer %d MiB %s\n",
		float64(r.mem.heap)/(1<<20), float64(r.mem.rss)/(1<<20), o.dedupe>>20, verdict(r.mem.rss <= o.dedupe))
	if want := int64(o.keys) + 1; r.left != want {
		return fmt.Errorf("%d records left after cleaning, want %d (one per key)", r.left, want)
	}
	if o.strict && (ratio < o.targetRate || r.mem.rss > o.dedupe) {
		return errors.New("target missed")
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

func parseCodec(s string) (record.Codec, error) {
	for c := record.None; c <= record.Zstd; c++ {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("cleaner bench: unknown codec %q", s)
}

// generateLog writes the benchmark log into dir and closes it cleanly;
// everything but a one-record active segment is sealed. It returns the
// number of records and the size of the sealed segments.
func generateLog(dir string, o options, codec record.Codec) (records, sealed int64, err error) {
	l, err := local.Open(dir, local.Config{SegmentBytes: o.segment}, slog.New(slog.DiscardHandler))
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, l.Close()) }()
	// The records are stamped eight days back: older than any compaction
	// lag or segment age the cleaner looks at.
	if records, err = generate(l, o, codec, time.Now().Add(-8*24*time.Hour).UnixMilli()); err != nil {
		return records, 0, err
	}
	// Seal everything (the active segment is never cleaned): the last
	// record rolls the segment by age.
	l.SetConfig(local.Config{SegmentBytes: o.segment, SegmentMs: 1})
	time.Sleep(2 * time.Millisecond)
	if _, err := generateBatch(l, []record.Record{{Key: []byte("end"), Value: []byte("end")}}, record.None, time.Now().UnixMilli()); err != nil {
		return records, 0, err
	}
	segs := l.Segments()
	for _, s := range segs[:len(segs)-1] {
		sealed += s.Size
	}
	return records, sealed, nil
}

// generate appends batches of random keyed records until the log holds
// o.size bytes and returns how many records it wrote.
func generate(l *local.Log, o options, codec record.Codec, ts int64) (int64, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, o.valueSize)
	for i := range value {
		value[i] = byte('a' + rng.IntN(26))
	}
	recs := make([]record.Record, o.batch)
	// The random part leaves room for the final pass over every key.
	final := int64(o.keys) * int64(o.valueSize+24)
	var n, written int64
	for written < o.size-final {
		for i := range recs {
			recs[i] = record.Record{OffsetDelta: int32(i), Key: fmt.Appendf(recs[i].Key[:0], "key-%08d", rng.IntN(o.keys)), Value: value}
		}
		size, err := generateBatch(l, recs, codec, ts)
		if err != nil {
			return n, err
		}
		n += int64(len(recs))
		written += size
	}
	// Every key at least once, so that the result is easy to check.
	for k := 0; k < o.keys; k += o.batch {
		batch := recs[:min(o.batch, o.keys-k)]
		for i := range batch {
			batch[i] = record.Record{OffsetDelta: int32(i), Key: fmt.Appendf(nil, "key-%08d", k+i), Value: value}
		}
		if _, err := generateBatch(l, batch, codec, ts); err != nil {
			return n, err
		}
		n += int64(len(batch))
	}
	return n, nil
}

// generateBatch appends one batch of recs and returns its size.
func generateBatch(l *local.Log, recs []record.Record, codec record.Codec, ts int64) (int64, error) {
	b, err := record.Build(record.BuildOptions{Codec: codec, FirstTimestamp: ts}, recs)
	if err != nil {
		return 0, err
	}
	if _, err := l.AppendAsLeader([]record.Batch{b}, local.AppendOptions{}); err != nil {
		return 0, err
	}
	return int64(len(b)), nil
}
