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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/test/harness"
)

// options are the command-line settings.
type options struct {
	duration   time.Duration
	warmup     time.Duration
	recordSize int
	partitions int
	rateMB     float64
	sessions   []int
	trials     int
	dir        string
	keep       bool
	warmGiB    int
	set        config.Settings // broker settings of the throughput cluster
	raw        bool            // also run the raw replication peer (raw.go)
}

func parseFlags(args []string) (options, error) {
	var o options
	var sessions string
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured length of each throughput run, and of the latency run")
	fs.DurationVar(&o.warmup, "warmup", 0, "unmeasured produce before each throughput run, to its topic, e.g. -warmup 75s to measure with the page cache filled (0: none)")
	fs.IntVar(&o.recordSize, "record-size", 1024, "value bytes per record")
	fs.IntVar(&o.partitions, "partitions", 3, "partitions of the throughput topics (leaders spread over the brokers)")
	fs.Float64Var(&o.rateMB, "rate", 10, "MB/s of the fixed-rate latency run")
	fs.StringVar(&sessions, "sessions", "3000,9000", "broker.session.timeout.ms values of the failover runs")
	fs.IntVar(&o.trials, "trials", 3, "failover trials per session timeout (the median is reported)")
	fs.StringVar(&o.dir, "dir", "", "directory under which a new one for data and logs is made (default: the system temp dir)")
	fs.BoolVar(&o.keep, "keep", false, "keep the data and logs afterwards")
	fs.BoolVar(&o.raw, "raw", true, "also measure the raw replication peer: the same bytes moved with nothing but TCP, CRC, pwrite and sendfile (raw.go)")
	fs.IntVar(&o.warmGiB, "warm", 8, "GiB written and deleted first so the page cache's pages were touched once (0: skip)")
	o.set = config.Settings{}
	fs.Var(o.set, "set", "a broker setting key=value of the throughput cluster (repeatable), e.g. -set log.page.cache.window.bytes=0")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, s := range strings.Split(sessions, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("-sessions: bad value %q", s)
		}
		o.sessions = append(o.sessions, n)
	}
	if o.warmup < 0 {
		return o, errors.New("-warmup must not be negative")
	}
	if o.duration <= 0 || o.recordSize <= 0 || o.partitions <= 0 || o.rateMB <= 0 || o.trials <= 0 {
		return o, errors.New("-duration, -record-size, -partitions, -rate and -trials must be positive")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench cluster:", err)
		os.Exit(1)
	}
}

// maxWriteRate bounds what one throughput run writes per second, over all
// replicas: above the fastest run seen, the raw peer's RF=1 (doc/perf.md).
const maxWriteRate = 1.5e9

// checkDiskRoom refuses runs that could fill the disk: a run's topic (or
// the raw peer's files) is deleted only after it, so warm-up and run
// together must fit.
func checkDiskRoom(dir string, o options) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	free := float64(st.Bavail) * float64(st.Bsize)
	if need := (o.warmup + o.duration).Seconds() * maxWriteRate; need > free {
		return fmt.Errorf("-warmup %s -duration %s: a run may write %.0f GB, %s has %.0f GB free", o.warmup, o.duration, need/1e9, dir, free/1e9)
	}
	return nil
}

func run(ctx context.Context, o options) (err error) {
	// Data goes to a new directory, under -dir when given: only what the
	// bench created is ever removed.
	dir, err := os.MkdirTemp(o.dir, "strata-bench-cluster-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	} else {
		fmt.Printf("data and logs in %s\n", dir)
	}
	bin, err := harness.BuildStrata(dir)
	if err != nil {
		return err
	}
	fmt.Printf("bench cluster: 3 brokers + 1 etcd on loopback, %d B records, %d partitions, GOMAXPROCS %d, %s\n",
		o.recordSize, o.partitions, runtime.GOMAXPROCS(0), runtime.Version())

	if err := checkDiskRoom(dir, o); err != nil {
		return err
	}
	if err := warmPageCache(dir, o.warmGiB); err != nil {
		return err
	}
	// min.insync.replicas stays 1 here: with 2 an acks=all produce to the
	// RF=1 topic would fail (NOT_ENOUGH_REPLICAS), as in Kafka. RF=3 acks=all
	// still waits for the whole ISR.
	c, err := startCluster(bin, filepath.Join(dir, "throughput"), 3, o.set)
	if err != nil {
		return err
	}
	tput, err := throughput(ctx, c, o)
	c.stop()
	if err != nil {
		return err
	}
	if o.raw {
		line, err := rawThroughput(ctx, dir, o)
		if err != nil {
			return err
		}
		tput = append(tput, line)
	}

	var lines []string
	for _, ms := range o.sessions {
		session := time.Duration(ms) * time.Millisecond
		fmt.Printf("failover with broker.session.timeout.ms=%d:\n", ms)
		c, err := startCluster(bin, filepath.Join(dir, "failover-"+strconv.Itoa(ms)), 3, map[string]string{
			"min.insync.replicas":       "2",
			"broker.session.timeout.ms": strconv.Itoa(ms),
		})
		if err != nil {
			return err
		}
		times, err := measureFailover(ctx, c, o.trials, session)
		c.stop()
		if err != nil {
			return err
		}
		m := median(times)
		lines = append(lines, fmt.Sprintf("failover (session %5d ms): median %7.0f ms over %d trials, %.2f× the lease TTL (target < 2×: %s)",
			ms, float64(m)/float64(time.Millisecond), len(times), float64(m)/float64(session), verdict(m < 2*session)))
	}
	fmt.Println()
	fmt.Println("summary:")
	for _, l := range append(tput, lines...) {
		fmt.Println("  " + l)
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
