package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/strata-broker/strata/perf"
)

// benchOptions are the command-line settings of one bench invocation.
type benchOptions struct {
	records      int64
	recordSize   int
	partitions   int
	rounds       int
	linger       time.Duration
	phaseTimeout time.Duration
	systems      []string
	codecs       []string // compressed produce runs, validated against unchecked
	txn          bool     // run the transactions workload
	tls          bool     // run the security workload: TLS and SCRAM
	tlsBare      bool     // the security workload also over TLS without wire.TLSBase
	cpuprofile   string
	dir          string
	keep         bool
	verbose      bool
}

// runResult is one system's produce and consume results in one round.
type runResult struct {
	round   int
	produce perf.Result
	consume perf.Result
	// CPU time this process (client and, for strata, broker) used in
	// each phase: steadier than wall time on a shared machine.
	produceCPU, consumeCPU time.Duration
	err                    error
}

const topic = "bench"

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Printf("bench: %d records × %d B (%.0f MB), %d partitions, acks=all, no compression, linger %s, %d round(s), GOMAXPROCS %d, %s\n",
		opts.records, opts.recordSize, float64(opts.records)*float64(opts.recordSize)/(1<<20),
		opts.partitions, opts.linger, opts.rounds, runtime.GOMAXPROCS(0), runtime.Version())
	results := map[string][]runResult{}
	failed := false
	for round := range opts.rounds {
		order := slices.Clone(opts.systems)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, name := range order {
			r := runOnce(ctx, name, round, opts)
			results[name] = append(results[name], r)
			if r.err != nil {
				failed = true
				fmt.Printf("round %d %-6s ERROR: %v\n", round+1, name, r.err)
			}
			if ctx.Err() != nil {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(opts.systems) > 0 {
		fmt.Println()
		printTable(os.Stdout, results)
	}
	if len(opts.codecs) > 0 && ctx.Err() == nil {
		fmt.Println()
		runs := runCompressedRounds(ctx, opts)
		fmt.Println()
		printCompressedTable(os.Stdout, opts.codecs, runs)
		for _, r := range runs {
			failed = failed || r.err != nil
		}
	}
	if opts.txn && ctx.Err() == nil {
		fmt.Println()
		runs := runTxnRounds(ctx, opts)
		fmt.Println()
		printTxnTable(os.Stdout, runs)
		for _, r := range runs {
			failed = failed || r.err != nil
		}
	}
	if opts.tls && ctx.Err() == nil {
		fmt.Println()
		runs := runTLSRounds(ctx, opts)
		fmt.Println()
		printTLSTable(os.Stdout, runs)
		for _, r := range runs {
			failed = failed || r.err != nil
		}
	}
	if failed {
		os.Exit(1)
	}
}

// runCompressedRounds runs strata on the compressed workload of each
// codec, validating and unchecked in alternating order, every round.
func runCompressedRounds(ctx context.Context, opts benchOptions) []compressedRun {
	var runs []compressedRun
	for round := range opts.rounds {
		for _, codec := range opts.codecs {
			for i := range 2 {
				validated := (round+i)%2 == 0
				r := runCompressed(ctx, codec, validated, round, opts)
				if r.err != nil {
					fmt.Printf("round %d strata %s %s ERROR: %v\n", round+1, codec, mode(validated), r.err)
				}
				runs = append(runs, r)
				if ctx.Err() != nil {
					return runs
				}
			}
		}
	}
	return runs
}

// parseFlags reads the command line into benchOptions.
func parseFlags(args []string) (benchOptions, error) {
	var o benchOptions
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Int64Var(&o.records, "records", 300_000, "records per produce phase")
	fs.IntVar(&o.recordSize, "record-size", 1024, "value bytes per record")
	fs.IntVar(&o.partitions, "partitions", 4, "partitions of the bench topic")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each runs every system once, in alternating order")
	fs.DurationVar(&o.linger, "linger", perf.DefaultLinger, "producer linger (negative = none)")
	fs.DurationVar(&o.phaseTimeout, "phase-timeout", 90*time.Second, "bound on each produce or consume phase")
	systems := fs.String("systems", "strata,kfake", "comma-separated systems of the main table (strata, kfake; empty: skip the main table)")
	codecs := fs.String("codecs", "lz4,zstd", "codecs whose compressed produce strata runs validated and unchecked (empty: none)")
	fs.BoolVar(&o.txn, "txn", true, "also run the transactions workload: transactional against idempotent produce, read_committed against read_uncommitted, strata against kfake transactions")
	fs.BoolVar(&o.tls, "tls", true, "also run the security workload: produce and consume over TLS against plaintext, and SCRAM-SHA-512 connection cost")
	fs.BoolVar(&o.tlsBare, "tls-bare", false, "the security table also runs TLS straight on the TCP connection, as before wire.TLSBase (a bench-only switch), and compares")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write CPU profiles of round 1's strata phases to FILE-produce.EXT, FILE-consume.EXT, FILE-produce-CODEC-MODE.EXT and (security table) FILE-tls-produce.EXT, FILE-plain-produce.EXT, ...")
	fs.StringVar(&o.dir, "dir", "", "parent of strata's temporary data directory (default: the system temp dir; the security table: /dev/shm when it has room)")
	fs.BoolVar(&o.keep, "keep", false, "keep strata's data directory")
	fs.BoolVar(&o.verbose, "v", false, "log strata at info level (default: warnings only)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for s := range strings.SplitSeq(*systems, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if starters[s] == nil {
			return o, fmt.Errorf("bench: unknown system %q (want strata, kfake)", s)
		}
		o.systems = append(o.systems, s)
	}
	for c := range strings.SplitSeq(*codecs, ",") {
		switch c = strings.TrimSpace(c); c {
		case "":
		case "gzip", "snappy", "lz4", "zstd":
			o.codecs = append(o.codecs, c)
		default:
			return o, fmt.Errorf("bench: unknown codec %q (want gzip, snappy, lz4, zstd)", c)
		}
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("bench: unexpected arguments %q", fs.Args())
	case len(o.systems) == 0 && len(o.codecs) == 0 && !o.txn && !o.tls:
		return o, errors.New("bench: nothing to run: no -systems and every other table off")
	case o.records <= 0 || o.recordSize <= 0 || o.partitions <= 0:
		return o, errors.New("bench: -records, -record-size and -partitions must be positive")
	case o.rounds <= 0 || o.rounds > 100:
		return o, errors.New("bench: -rounds must be in 1..100")
	case o.phaseTimeout <= 0:
		return o, errors.New("bench: -phase-timeout must be positive")
	}
	return o, nil
}

// runOnce starts a fresh instance of system name, produces then consumes
// the workload, and stops it again.
func runOnce(ctx context.Context, name string, round int, o benchOptions) (r runResult) {
	r.round = round
	r.err = onFresh(ctx, starters[name], o, func(sys *system) error {
		r = produceConsume(ctx, sys, name, topic, round, o)
		return r.err
	})
	return r
}

// onFresh starts a fresh system with start, runs fn on it and stops it
// again, freeing the finished run's memory before the next one.
func onFresh(ctx context.Context, start starter, o benchOptions, fn func(*system) error) (err error) {
	sys, err := start(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, sys.stop())
		runtime.GC()
	}()
	return fn(sys)
}

// produceConsume produces then consumes the workload on sys, to and from
// topic.
func produceConsume(ctx context.Context, sys *system, name, topic string, round int, o benchOptions) (r runResult) {
	r.round = round
	// The main table's strata run profiles as produce and consume, the
	// security table's as tls-produce, plain-consume, ...
	profile := o.cpuprofile != "" && round == 0 && (name == "strata" || name == "tls" || name == "plain" || name == "bare")
	phase := func(p string) string {
		if name == "strata" {
			return p
		}
		return name + "-" + p
	}
	// A phase gets its own bound plus slack to flush and shut down.
	pctx, cancel := context.WithTimeout(ctx, o.phaseTimeout+30*time.Second)
	defer cancel()

	cpu := perf.SelfCPU()
	r.produce, r.err = profiled(profile, o.cpuprofile, phase("produce"), func() (perf.Result, error) {
		return perf.Produce(pctx, perf.ProduceOptions{
			Brokers: sys.brokers, Topic: topic, RecordSize: o.recordSize, Records: o.records,
			Duration: o.phaseTimeout, Partitions: o.partitions, ReplicationFactor: 1, Linger: o.linger,
			TLS: sys.tls,
		})
	})
	r.produceCPU = perf.SelfCPU() - cpu
	fmt.Printf("round %d %-6s %s; process CPU %.2fs\n", round+1, name, r.produce, r.produceCPU.Seconds())
	if r.err != nil {
		return r
	}
	if r.produce.Records < o.records {
		r.err = fmt.Errorf("bench: produce acknowledged %d of %d records within %s", r.produce.Records, o.records, o.phaseTimeout)
		return r
	}
	cpu = perf.SelfCPU()
	r.consume, r.err = profiled(profile, o.cpuprofile, phase("consume"), func() (perf.Result, error) {
		return perf.Consume(pctx, perf.ConsumeOptions{
			Brokers: sys.brokers, Topic: topic, Records: r.produce.Records, Duration: o.phaseTimeout,
			TLS: sys.tls,
		})
	})
	r.consumeCPU = perf.SelfCPU() - cpu
	fmt.Printf("round %d %-6s %s; process CPU %.2fs\n", round+1, name, r.consume, r.consumeCPU.Seconds())
	if r.err == nil && r.consume.Records < r.produce.Records {
		r.err = fmt.Errorf("bench: consume read %d of %d records within %s", r.consume.Records, r.produce.Records, o.phaseTimeout)
	}
	return r
}

// profiled runs fn, CPU-profiling it into a file named after base and
// phase when on is set.
func profiled(on bool, base, phase string, fn func() (perf.Result, error)) (perf.Result, error) {
	if !on {
		return fn()
	}
	path := profilePath(base, phase)
	f, err := os.Create(path)
	if err != nil {
		return perf.Result{}, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return perf.Result{}, errors.Join(fmt.Errorf("bench: cpu profile: %w", err), f.Close())
	}
	res, err := fn()
	pprof.StopCPUProfile()
	if cerr := f.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("bench: cpu profile %s: %w", path, cerr))
	}
	fmt.Printf("bench: wrote %s CPU profile to %s\n", phase, path)
	return res, err
}

// profilePath turns ("cpu.pprof", "produce") into "cpu-produce.pprof".
func profilePath(base, phase string) string {
	ext := filepath.Ext(base)
	return strings.TrimSuffix(base, ext) + "-" + phase + ext
}
