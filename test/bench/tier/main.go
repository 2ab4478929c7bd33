package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/perf"
	"github.com/strata-broker/strata/test/minio"
)

// options are the command-line settings.
type options struct {
	partitions     int
	segment        int64
	localRetention int64
	factor         int64
	rate           float64 // MB/s
	recordSize     int
	rounds         int
	cpuprofile     string
	kgoProfile     string
	verbose        bool
	set            config.Settings // broker settings over the bench's
}

// Targets of the bench; printed next to the measurements, never enforced.
const (
	targetRatio  = 0.8
	targetLagP99 = 5 * time.Second
)

// Bounds of the waiting phases (they only stop a broken run).
const (
	copyWaitBound  = 120 * time.Second
	roundBound     = 120 * time.Second
	samplePeriod   = 20 * time.Millisecond
	manifestPeriod = 50 * time.Millisecond
)

// topic is the tiered topic; hotTopic holds the same number of records
// on local disk only, the reference of what the Kafka read path itself
// costs.
const (
	topic    = "tier-bench"
	hotTopic = "tier-bench-hot"
)

func main() {
	o, err := parseFlags()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "tier bench:", err)
		os.Exit(1)
	}
}

func parseFlags() (options, error) {
	var o options
	fs := flag.NewFlagSet("tier", flag.ContinueOnError)
	fs.IntVar(&o.partitions, "partitions", 4, "partitions of the tiered topic")
	fs.Int64Var(&o.segment, "segment", 8<<20, "segment.bytes of the topic")
	fs.Int64Var(&o.localRetention, "local-retention", 8<<20, "local.retention.bytes of the topic")
	fs.Int64Var(&o.factor, "factor", 20, "produce this many times local.retention.bytes per partition (at least 10: the local disk bound is to hold while producing 10× local.retention.bytes; 20 makes each timed cold read last about a second)")
	fs.Float64Var(&o.rate, "rate", 32, "produce rate in MB/s (0: unthrottled)")
	fs.IntVar(&o.recordSize, "record-size", 1024, "value bytes per record")
	fs.IntVar(&o.rounds, "rounds", 3, "cold-read rounds (broker and raw GET alternate)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the first cold raw fetch (broker and reader) to this file")
	fs.StringVar(&o.kgoProfile, "kgo-cpuprofile", "", "write a CPU profile of the first cold kgo consume (broker and consumer) to this file")
	fs.BoolVar(&o.verbose, "v", false, "log the broker at info level (default: warnings only)")
	o.set = config.Settings{}
	fs.Var(o.set, "set", "a broker setting key=value over the bench's (repeatable), e.g. -set remote.log.reader.memory.bytes=67108864")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("tier bench: unexpected arguments %q", fs.Args())
	case o.partitions <= 0 || o.segment <= 0 || o.localRetention < 0 || o.factor <= 0 || o.recordSize <= 0:
		return o, errors.New("tier bench: -partitions, -segment, -factor and -record-size must be positive, -local-retention not negative")
	case o.rounds <= 0 || o.rounds > 100 || o.rate < 0:
		return o, errors.New("tier bench: -rounds must be in 1..100 and -rate not negative")
	}
	return o, nil
}

// bench is the running setup: MinIO, the broker and the topic.
type bench struct {
	o        options
	s3       *minio.Server
	dir      string
	settings map[string]string
	log      *slog.Logger
	node     *node // nil while stopped
	prefixes []string
}

func run(ctx context.Context, o options) (err error) {
	b := &bench{o: o}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	b.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if b.s3, err = minio.New(ctx); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.s3.Close()) }()
	if b.dir, err = os.MkdirTemp("", "strata-tier-bench-"); err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer func() {
		if b.node != nil {
			err = errors.Join(err, b.node.stop())
		}
		err = errors.Join(err, os.RemoveAll(b.dir))
	}()
	b.settings = brokerConfig(b.dir, b.s3)
	maps.Copy(b.settings, b.o.set)
	if err := b.restart(ctx); err != nil {
		return err
	}
	if err := b.createTopic(ctx); err != nil {
		return err
	}
	total := o.factor * o.localRetention * int64(o.partitions)
	fmt.Printf("tier bench: %d partitions, segment.bytes %d MiB, local.retention.bytes %d MiB, %d MiB produced at %s, remote.log.manager.task.interval.ms default, MinIO on loopback, GOMAXPROCS %d, %s\n",
		o.partitions, o.segment>>20, o.localRetention>>20, total>>20, rateString(o.rate), runtime.GOMAXPROCS(0), runtime.Version())

	ds := newDirSampler(partitionDirs(b.dir, topic, o.partitions))
	ms := newManifestSampler(b.s3.Client, b.s3.Bucket, b.prefixes)
	if err := b.produce(ctx, total, ds, ms); err != nil {
		return err
	}
	lags, missing := copyLags(ds, ms)
	localStart, err := b.waitLocalRetention(ctx, ds)
	if err != nil {
		return err
	}
	ms.sample(ctx)
	cs, err := findColdSet(ctx, b.s3.Client, b.s3.Bucket, b.prefixes, ms.last, localStart)
	if err != nil {
		return err
	}
	if len(cs.keys) == 0 {
		return errors.New("nothing is only in the bucket; produce more (-factor)")
	}
	fmt.Printf("cold set: %d segments, %.1f MiB only in MinIO\n", len(cs.keys), float64(cs.bytes)/(1<<20))
	hot, err := b.produceHot(ctx, cs)
	if err != nil {
		return err
	}
	// One untimed pass warms MinIO, so the first timed read of the objects
	// pays no more than the later ones.
	if _, err := rawGet(ctx, b.s3.Client, b.s3.Bucket, cs); err != nil {
		return err
	}
	res, err := b.coldRounds(ctx, cs, hot)
	if err != nil {
		return err
	}
	fmt.Println()
	b.report(lags, missing, ds, res)
	return nil
}

// restart (re)starts the broker, which empties its chunk cache.
func (b *bench) restart(ctx context.Context) error {
	if b.node != nil {
		err := b.node.stop()
		b.node = nil
		if err != nil {
			return err
		}
	}
	n, err := startBroker(ctx, b.settings, b.log)
	if err != nil {
		return err
	}
	b.node = n
	return nil
}

// createTopic creates the tiered topic and notes its key prefixes.
func (b *bench) createTopic(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.node.addr))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	cfg := map[string]*string{}
	for k, v := range map[string]string{
		"remote.storage.enable": "true",
		"segment.bytes":         strconv.FormatInt(b.o.segment, 10),
		"local.retention.bytes": strconv.FormatInt(b.o.localRetention, 10),
	} {
		cfg[k] = &v
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(b.o.partitions), 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for p := range b.o.partitions {
		b.prefixes = append(b.prefixes, fmt.Sprintf("%s-%s/%d/", topic, hex.EncodeToString(resp.ID[:]), p))
	}
	return perf.EnsureTopic(ctx, []string{b.node.addr}, topic, b.o.partitions, 1)
}

// produce writes total bytes at the configured rate with both samplers
// running, then samples on until every sealed segment's copy finished.
func (b *bench) produce(ctx context.Context, total int64, ds *dirSampler, ms *manifestSampler) error {
	records := total / int64(b.o.recordSize)
	po := perf.ProduceOptions{
		Brokers: []string{b.node.addr}, Topic: topic, RecordSize: b.o.recordSize, Records: records,
		Partitions: b.o.partitions, ReplicationFactor: 1,
	}
	if b.o.rate > 0 {
		po.Throughput = b.o.rate * (1 << 20) / float64(b.o.recordSize)
	}
	stopDir := sampleEvery(samplePeriod, func(context.Context) { ds.sample(time.Now()) })
	stopManifest := sampleEvery(manifestPeriod, ms.sample)
	res, err := perf.Produce(ctx, po)
	stopDir()
	stopManifest()
	fmt.Printf("produce: %s\n", res)
	if err != nil {
		return err
	}
	if res.Records < records {
		return fmt.Errorf("produce acknowledged %d of %d records", res.Records, records)
	}
	return waitFor(ctx, "every sealed segment to be copied", copyWaitBound, manifestPeriod, func() bool {
		ds.sample(time.Now())
		ms.sample(ctx)
		_, missing := copyLags(ds, ms)
		return missing == 0
	})
}

// waitLocalRetention waits until local retention has trimmed every
// partition (dropping its oldest segment would go below
// local.retention.bytes) and returns the local log starts.
func (b *bench) waitLocalRetention(ctx context.Context, ds *dirSampler) ([]int64, error) {
	starts := make([]int64, len(ds.dirs))
	err := waitFor(ctx, "local retention", copyWaitBound, manifestPeriod, func() bool {
		for p, dir := range ds.dirs {
			files, err := segmentFiles(dir)
			if err != nil || len(files) == 0 {
				return false
			}
			bases := slices.Sorted(maps.Keys(files))
			var sum int64
			for _, size := range files {
				sum += size
			}
			if len(bases) > 1 && sum-files[bases[0]] >= b.o.localRetention {
				return false
			}
			starts[p] = bases[0]
		}
		return true
	})
	return starts, err
}

// hotSet is the local-only reference topic.
type hotSet struct {
	records int64
	bytes   int64 // of its .log files
}

// produceHot writes as many records as the cold set holds to hotTopic,
// which is not tiered and keeps everything on local disk.
func (b *bench) produceHot(ctx context.Context, cs coldSet) (hotSet, error) {
	var hs hotSet
	for _, last := range cs.lastOff {
		hs.records += last + 1
	}
	res, err := perf.Produce(ctx, perf.ProduceOptions{
		Brokers: []string{b.node.addr}, Topic: hotTopic, RecordSize: b.o.recordSize, Records: hs.records,
		Partitions: b.o.partitions, ReplicationFactor: 1,
	})
	if err != nil {
		return hs, err
	}
	if res.Records < hs.records {
		return hs, fmt.Errorf("produce to %s acknowledged %d of %d records", hotTopic, res.Records, hs.records)
	}
	for _, dir := range partitionDirs(b.dir, hotTopic, b.o.partitions) {
		files, err := segmentFiles(dir)
		if err != nil {
			return hs, fmt.Errorf("size of %s: %w", dir, err)
		}
		for _, size := range files {
			hs.bytes += size
		}
	}
	return hs, nil
}

// roundResults are the MB/s of each read, by round.
type roundResults struct {
	cold, fetch, raw, hot []float64 // MB/s
	fetchCPU, rawCPU      []float64 // CPU ms per MB, MinIO and this process
	fetchS3, rawS3        []float64 // CPU ms per MB of MinIO alone
	hotCPU, coldCPU       []float64 // CPU ms per MB of the hot and the cold kgo consume (MinIO, broker and kgo)
}

// coldRounds alternates cold consumes (each on a freshly started broker),
// raw GETs and hot consumes, and returns their MB/s.
func (b *bench) coldRounds(ctx context.Context, cs coldSet, hs hotSet) (rr roundResults, err error) {
	for round := range b.o.rounds {
		rctx, cancel := context.WithTimeout(ctx, roundBound)
		var c, first, f, r, h time.Duration
		var fcpu, rcpu, fs3, rs3, hcpu, ccpu time.Duration
		steps := []func() error{
			func() error {
				if err := b.restart(rctx); err != nil {
					return err
				}
				var n int64
				var err error
				fcpu, fs3 = b.cpu(func() {
					f, err = profiled(round == 0 && b.o.cpuprofile != "", b.o.cpuprofile, func() (d time.Duration, err error) {
						d, n, err = fetchCold(rctx, b.node.addr, topic, cs)
						return d, err
					})
				})
				if err == nil && n != cs.bytes {
					err = fmt.Errorf("raw cold fetch read %d bytes, want %d", n, cs.bytes)
				}
				return err
			},
			func() error {
				if err := b.restart(rctx); err != nil {
					return err
				}
				var err error
				ccpu, _ = b.cpu(func() {
					c, err = profiled(round == 0 && b.o.kgoProfile != "", b.o.kgoProfile, func() (d time.Duration, err error) {
						d, first, err = consumeCold(rctx, b.node.addr, topic, cs)
						return d, err
					})
				})
				return err
			},
			func() error {
				var err error
				rcpu, rs3 = b.cpu(func() { r, err = rawGet(rctx, b.s3.Client, b.s3.Bucket, cs) })
				return err
			},
			func() error {
				var res perf.Result
				var err error
				hcpu, _ = b.cpu(func() {
					res, err = perf.Consume(rctx, perf.ConsumeOptions{Brokers: []string{b.node.addr}, Topic: hotTopic, Records: hs.records})
				})
				if err == nil && res.Records < hs.records {
					err = fmt.Errorf("hot consume read %d of %d records", res.Records, hs.records)
				}
				h = res.Elapsed
				return err
			},
		}
		if round%2 == 1 {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				cancel()
				return rr, fmt.Errorf("round %d: %w", round+1, err)
			}
		}
		cancel()
		rr.cold, rr.raw, rr.hot = append(rr.cold, mbps(cs.bytes, c)), append(rr.raw, mbps(cs.bytes, r)), append(rr.hot, mbps(hs.bytes, h))
		rr.fetch = append(rr.fetch, mbps(cs.bytes, f))
		mb := float64(cs.bytes) / (1 << 20)
		rr.fetchCPU, rr.rawCPU = append(rr.fetchCPU, fcpu.Seconds()*1000/mb), append(rr.rawCPU, rcpu.Seconds()*1000/mb)
		rr.fetchS3, rr.rawS3 = append(rr.fetchS3, fs3.Seconds()*1000/mb), append(rr.rawS3, rs3.Seconds()*1000/mb)
		rr.hotCPU = append(rr.hotCPU, hcpu.Seconds()*1000/(float64(hs.bytes)/(1<<20)))
		rr.coldCPU = append(rr.coldCPU, ccpu.Seconds()*1000/mb)
		fmt.Printf("round %d: cold consume %.1f MB/s (%.2fs, first records after %.2fs), cold raw fetch %.1f MB/s (%.2fs), raw GET %.1f MB/s (%.2fs), hot consume %.1f MB/s (%.2fs); cold/raw %.2f, cold fetch/raw %.2f, cold/hot %.2f\n",
			round+1, rr.cold[round], c.Seconds(), first.Seconds(), rr.fetch[round], f.Seconds(), rr.raw[round], r.Seconds(), rr.hot[round], h.Seconds(), rr.cold[round]/rr.raw[round], rr.fetch[round]/rr.raw[round], rr.cold[round]/rr.hot[round])
	}
	return rr, nil
}

// report prints the table of results.
func (b *bench) report(lags []time.Duration, missing int, ds *dirSampler, rr roundResults) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tvalue\ttarget\t")
	c, f, r, h := median(rr.cold), median(rr.fetch), median(rr.raw), median(rr.hot)
	fmt.Fprintf(tw, "cold read (broker, kgo) MB/s\t%.1f\t\t\n", c)
	fmt.Fprintf(tw, "cold read (broker, raw Fetch, records not decoded) MB/s\t%.1f\t\t\n", f)
	fmt.Fprintf(tw, "raw minio-go GET MB/s\t%.1f\t\t\n", r)
	fmt.Fprintf(tw, "hot read (local, kgo, reference) MB/s\t%.1f\t\t\n", h)
	if r > 0 && h > 0 {
		fmt.Fprintf(tw, "cold read / raw GET\t%.2fx\t≥ %.1fx\t%s\n", c/r, targetRatio, verdict(c/r >= targetRatio, "meets", "below"))
		fmt.Fprintf(tw, "cold raw Fetch / raw GET\t%.2fx\t≥ %.1fx\t%s\n", f/r, targetRatio, verdict(f/r >= targetRatio, "meets", "below"))
		// Each round's reads ran back to back under the same machine load;
		// the median of the rounds' own ratios is robust to load drifting
		// between rounds, which the ratio of medians is not.
		pc, pf := median(ratios(rr.cold, rr.raw)), median(ratios(rr.fetch, rr.raw))
		fmt.Fprintf(tw, "cold read / raw GET, median of the rounds' ratios\t%.2fx\t≥ %.1fx\t%s\n", pc, targetRatio, verdict(pc >= targetRatio, "meets", "below"))
		fmt.Fprintf(tw, "cold raw Fetch / raw GET, median of the rounds' ratios\t%.2fx\t≥ %.1fx\t%s\n", pf, targetRatio, verdict(pf >= targetRatio, "meets", "below"))
		fc, rc := median(rr.fetchCPU), median(rr.rawCPU)
		fmt.Fprintf(tw, "CPU ms/MB, MinIO + broker + reader: raw GET / cold raw Fetch\t%.2f / %.2f\t\t\n", rc, fc)
		fmt.Fprintf(tw, "CPU ms/MB of MinIO alone: raw GET / cold raw Fetch\t%.2f / %.2f\t\t\n", median(rr.rawS3), median(rr.fetchS3))
		fmt.Fprintf(tw, "CPU per MB, raw GET / cold raw Fetch (the ratio when both fill the cores)\t%.2fx\t\t\n", rc/fc)
		fmt.Fprintf(tw, "cold read / hot read\t%.2fx\t\t\n", c/h)
		// A cold kgo consume does all a hot one does (broker and kgo) and
		// MinIO serves the same bytes as to the raw GET: on these cores it
		// cannot go faster than this, whatever the broker's cold path costs.
		hc, rs := median(rr.hotCPU), median(rr.rawS3)
		ceiling := float64(runtime.NumCPU()) * 1000 / (hc + rs)
		fmt.Fprintf(tw, "CPU ms/MB of the kgo consume, hot (broker + kgo) / cold (MinIO + broker + kgo)\t%.2f / %.2f\t\t\n", hc, median(rr.coldCPU))
		fmt.Fprintf(tw, "ceiling of a cold kgo consume here: %d cores / (hot consume + MinIO's raw GET CPU per MB), / raw GET\t%.0f MB/s, %.2fx\t\t\n", runtime.NumCPU(), ceiling, ceiling/r)
		fmt.Fprintf(tw, "hot read / raw GET (the Kafka path's own ceiling)\t%.2fx\t\t\n", h/r)
	}
	p99 := quantile(lags, 0.99)
	fmt.Fprintf(tw, "copy lag median (%d segments)\t%.2fs\t\t\n", len(lags), quantile(lags, 0.5).Seconds())
	fmt.Fprintf(tw, "copy lag p99\t%.2fs\t< %s\t%s\n", p99.Seconds(), targetLagP99, verdict(len(lags) > 0 && p99 < targetLagP99, "meets", "misses"))
	fmt.Fprintf(tw, "copy lag max\t%.2fs\t\t\n", quantile(lags, 1).Seconds())
	perPart := b.o.localRetention + 2*b.o.segment
	bound := perPart * int64(b.o.partitions)
	fmt.Fprintf(tw, "local .log bytes peak (all partitions)\t%.1f MiB\t≤ %.1f MiB\t%s\n",
		float64(ds.peakTotal)/(1<<20), float64(bound)/(1<<20), verdict(ds.peakTotal <= bound, "within bound", "OVER bound"))
	worst := slices.Max(ds.peak)
	fmt.Fprintf(tw, "local .log bytes peak (worst partition)\t%.1f MiB\t≤ %.1f MiB\t%s\n",
		float64(worst)/(1<<20), float64(perPart)/(1<<20), verdict(worst <= perPart, "within bound", "OVER bound"))
	_ = tw.Flush()
	fmt.Printf("medians over %d round(s); MB = 2^20 bytes of .log objects; bound = local.retention.bytes + active segment + one in-flight copy per partition; copy lag = segment sealed (newer base on disk) → in manifest.json, sampled every %s/%s",
		len(rr.cold), samplePeriod, manifestPeriod)
	if missing > 0 {
		fmt.Printf("; %d sealed segments never seen copied", missing)
	}
	fmt.Println()
}

func verdict(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

func rateString(rate float64) string {
	if rate <= 0 {
		return "full speed"
	}
	return fmt.Sprintf("%.0f MB/s", rate)
}

// waitFor calls cond every period until it holds; it fails after bound.
func waitFor(ctx context.Context, what string, bound, period time.Duration, cond func() bool) error {
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", bound, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(period):
		}
	}
	return nil
}

// profiled runs fn, CPU-profiling it into path when on is set.
func profiled(on bool, path string, fn func() (time.Duration, error)) (time.Duration, error) {
	if !on {
		return fn()
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return 0, errors.Join(fmt.Errorf("cpu profile: %w", err), f.Close())
	}
	d, err := fn()
	pprof.StopCPUProfile()
	if cerr := f.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("cpu profile %s: %w", path, cerr))
	}
	fmt.Printf("tier bench: wrote the cold consume's CPU profile to %s\n", path)
	return d, err
}

// cpu runs fn and returns the CPU time MinIO and this process (broker and
// readers) spent meanwhile, and MinIO's part of it.
func (b *bench) cpu(fn func()) (total, s3 time.Duration) {
	pid := b.s3.Pid()
	s3Before, selfBefore := perf.ProcessCPU(pid), perf.SelfCPU()
	fn()
	s3 = perf.ProcessCPU(pid) - s3Before
	return s3 + perf.SelfCPU() - selfBefore, s3
}
