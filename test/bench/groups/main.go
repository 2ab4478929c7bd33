// Command groups benchmarks Strata's group coordinator against franz-go's
// kfake in the same run:
//
//   - OffsetCommit latency: -commits sequential commits of
//     -commit-partitions partitions (after -warmup unmeasured ones and at
//     least -settle, as the first commit creates __consumer_offsets), round
//     trip p50 and p99;
//   - rebalance time: -members franz-go group consumers (cooperative-sticky,
//     100 ms heartbeats) start at once on a topic of as many partitions;
//     the time from the first start until every member owns one partition.
//
// Every round starts a fresh single broker of each system, one after the
// other (alternating which goes first, so that a change of machine load
// hits both alike), each in a child process of its own (this binary with
// -serve), as a broker runs in production, so that neither shares a heap
// and garbage collector with the measuring clients (-in-process runs them
// here instead), and takes both measures on it; the table shows, over
// -rounds, the median of each round's commit p50 and p99, the p99 of all
// rounds' commits together, the mean, the median and the slowest rebalance time, and
// how many rebalances needed no heartbeat and the median of those and of
// the others (the rebalance time is bimodal: short when the members that
// start late still find the group rebalancing, two heartbeat intervals
// when they find it Stable), with the strata/kfake ratios (target: ≤ 1 for the
// commit p99 and the mean rebalance time, the expected time, since the
// median of a bimodal time over a few rounds only reads which mode came
// up more often). -trace prints each round's timeline
// of the members' group requests. The effective settings are printed
// first: one broker each, so each commit is acknowledged as soon as it is
// appended (Strata: to the page cache, not fsynced; kfake keeps it in
// memory). Strata runs with group.initial.rebalance.delay.ms=3 (-initial-delay),
// Kafka's setting for exactly this case, a new group whose members start
// together, scaled to loopback: it waits until no new member announced
// itself for 3 ms and every announced one joined, so that all ten land in
// one generation instead of the late ones finding a Stable group and
// waiting for heartbeats; kfake has no initial delay. -initial-delay 0
// shows the lottery without it. It exits non-zero only when a measure fails.
//
// Concurrency: systems run one after the other; each group member polls
// on its own goroutine, and main waits on their assignment callbacks; a
// child process's stdin closing tells it to stop.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// options are the command-line settings.
type options struct {
	commits, warmup, commitPartitions int
	settle                            time.Duration
	members, rounds                   int
	timeout                           time.Duration
	trace                             bool
	serveOptions
	profile   string // directory for profiles of the commit measure
	systems   string // comma-separated systems to run
	inProcess bool   // run the systems in this process, not each in its own
	serve     string // internal: run this system for a parent bench process
}

// sut is a system under test.
type sut struct {
	name  string
	start func(context.Context, serveOptions) (*system, error)
}

func main() {
	var o options
	flag.IntVar(&o.commits, "commits", 20000, "measured sequential OffsetCommits per round")
	flag.IntVar(&o.warmup, "warmup", 500, "unmeasured OffsetCommits first, each round")
	flag.DurationVar(&o.settle, "settle", time.Second, "minimum time of the unmeasured commits")
	flag.IntVar(&o.commitPartitions, "commit-partitions", 4, "partitions per OffsetCommit")
	flag.IntVar(&o.members, "members", 10, "members of the rebalancing group (and partitions of its topic)")
	flag.IntVar(&o.rounds, "rounds", 11, "rounds (fresh brokers)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound of one rebalance")
	flag.BoolVar(&o.verbose, "v", false, "log Strata at info level")
	flag.DurationVar(&o.initialDelay, "initial-delay", 3*time.Millisecond, "strata's group.initial.rebalance.delay.ms (kfake has no initial delay)")
	flag.BoolVar(&o.trace, "trace", false, "print each round's rebalance timeline: every member's FindCoordinator, JoinGroup, SyncGroup and Heartbeat (m<member> <F|J|S|H> <start ms>+<round trip ms>)")
	flag.StringVar(&o.systems, "systems", "strata,kfake", "systems to measure, comma-separated")
	flag.StringVar(&o.profile, "profile", "", "write CPU, allocs, block and mutex profiles of each system's commit measure (first round) to this directory")
	flag.BoolVar(&o.inProcess, "in-process", false, "run the systems in this process (sharing its heap and garbage collector with the clients), not each in a child process")
	flag.StringVar(&o.serve, "serve", "", "internal: run this system for a parent bench process")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if o.serve != "" {
		if err := serve(ctx, o.serve, o.serveOptions); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	fmt.Printf("bench groups: %d rounds of %d OffsetCommits × %d partitions (sequential, after %d warmup and %s) and one %d-member join, GOMAXPROCS %d, %s\n",
		o.rounds, o.commits, o.commitPartitions, o.warmup, o.settle, o.members, runtime.GOMAXPROCS(0), runtime.Version())
	where := "its own process (this binary with -serve)"
	if o.inProcess {
		where = "this process"
	}
	fmt.Printf("settings (both): 1 broker in %s, replication factor 1; strata group.initial.rebalance.delay.ms=%d (kfake has no initial delay);\n", where, o.initialDelay.Milliseconds())
	fmt.Printf("  commits: OffsetCommit v%d, generation -1, acknowledged once appended (strata: to the page cache, no fsync; kfake: in memory);\n", commitVersion)
	fmt.Println("  members: franz-go, cooperative-sticky, heartbeat.interval 100ms, session.timeout 10s, retry backoff 10ms, clients created at once")
	var systems []sut
	for _, name := range []string{"strata", "kfake"} {
		if !slices.Contains(strings.Split(o.systems, ","), name) {
			continue
		}
		start := starters[name]
		if !o.inProcess {
			start = startProcess(name)
		}
		systems = append(systems, sut{name, start})
	}
	results := map[string][]round{}
	failed := false
	for r := range o.rounds {
		order := slices.Clone(systems)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			res, err := run(ctx, s, r, o)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s round %d: %v\n", s.name, r, err)
				failed = true
				continue
			}
			fmt.Printf("round %d %-6s commit p50 %7.3f ms  p99 %7.3f ms  rebalance %8.3f ms\n", r, s.name, ms(res.commitP50), ms(res.commitP99), ms(res.rebalance))
			results[s.name] = append(results[s.name], res)
		}
	}
	printTable(results)
	if failed {
		os.Exit(1)
	}
}

// run starts one system and takes one round of its measures.
func run(ctx context.Context, s sut, r int, o options) (res round, err error) {
	sys, err := s.start(ctx, o.serveOptions)
	if err != nil {
		return res, err
	}
	defer func() {
		if serr := sys.stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	const commitTopic, groupTopic = "bench-commit", "bench-group"
	id, err := createTopic(ctx, sys.addr, commitTopic, int32(o.commitPartitions))
	if err != nil {
		return res, err
	}
	if _, err := createTopic(ctx, sys.addr, groupTopic, int32(o.members)); err != nil {
		return res, err
	}
	var prof *profiler
	if r == 0 {
		if prof, err = startProfile(o.profile, s.name+"-commit"); err != nil {
			return res, err
		}
	}
	lat, err := measureCommits(ctx, sys.addr, commitTopic, id, o.commitPartitions, o.warmup, o.settle, o.commits)
	if err = errors.Join(err, prof.stop()); err != nil {
		return res, err
	}
	res.commitP50, res.commitP99 = percentile(lat, 0.50), percentile(lat, 0.99)
	res.commits = lat
	var tr *tracer
	if o.trace {
		tr = &tracer{}
		defer func() { fmt.Printf("trace %d %s: %s\n", r, s.name, tr) }()
	}
	res.rebalance, err = measureRebalance(ctx, sys.addr, groupTopic, fmt.Sprintf("bench-group-%d", r), o.members, o.members, o.timeout, tr)
	return res, err
}

// fastRebalance bounds the rebalances in which no member waited for a
// heartbeat (the members' heartbeat interval): the others took one or two
// more rebalances that members in a Stable group only learn of from their
// next heartbeat, so the rebalance time is bimodal.
const fastRebalance = 100 * time.Millisecond

// stat is one row of the table: a statistic of one system's rounds (false
// when it has no value, as a median of no rounds).
type stat struct {
	name   string
	target bool // strata/kfake ≤ 1 is the target
	value  func([]round) (time.Duration, bool)
}

// median is the stat of the median of f over the rounds keep selects.
func median(f func(round) time.Duration, keep func(round) bool) func([]round) (time.Duration, bool) {
	return func(rs []round) (time.Duration, bool) {
		var v []time.Duration
		for _, r := range rs {
			if keep == nil || keep(r) {
				v = append(v, f(r))
			}
		}
		if len(v) == 0 {
			return 0, false
		}
		slices.Sort(v)
		return v[len(v)/2], true
	}
}

// printTable writes the strata vs kfake table of statistics over rounds.
func printTable(results map[string][]round) {
	rebalance := func(r round) time.Duration { return r.rebalance }
	rows := []stat{
		{"OffsetCommit p50 ms, median of rounds", false, median(func(r round) time.Duration { return r.commitP50 }, nil)},
		{"OffsetCommit p99 ms, median of rounds", true, median(func(r round) time.Duration { return r.commitP99 }, nil)},
		{"OffsetCommit p99 ms, all rounds' commits", true, func(rs []round) (time.Duration, bool) {
			var all []time.Duration
			for _, r := range rs {
				all = append(all, r.commits...)
			}
			slices.Sort(all)
			return percentile(all, 0.99), len(all) > 0
		}},
		// The rebalance time is bimodal (one generation, or a wait for
		// heartbeats), so the median of a few rounds only reads which mode
		// came up more often; the mean is the expected time, the target.
		{"rebalance to all assigned ms, mean", true, func(rs []round) (time.Duration, bool) {
			var sum time.Duration
			for _, r := range rs {
				sum += r.rebalance
			}
			return sum / time.Duration(max(len(rs), 1)), len(rs) > 0
		}},
		{"rebalance to all assigned ms, median", false, median(rebalance, nil)},
		{"rebalance to all assigned ms, slowest round", false, func(rs []round) (time.Duration, bool) {
			var worst time.Duration
			for _, r := range rs {
				worst = max(worst, r.rebalance)
			}
			return worst, len(rs) > 0
		}},
		{fmt.Sprintf("rebalance ms, median of rounds under %v", fastRebalance), false, median(rebalance, func(r round) bool { return r.rebalance < fastRebalance })},
		{fmt.Sprintf("rebalance ms, median of rounds over %v", fastRebalance), false, median(rebalance, func(r round) bool { return r.rebalance >= fastRebalance })},
	}
	s, k := results["strata"], results["kfake"]
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "over %d/%d rounds\tstrata\tkfake\tstrata/kfake\ttarget\t\t\n", len(s), len(k))
	for _, rw := range rows {
		cells := []string{rw.name, "-", "-", "-", "-", ""}
		if rw.target {
			cells[4] = "≤ 1.0x"
		}
		sv, sok := rw.value(s)
		kv, kok := rw.value(k)
		if sok {
			cells[1] = fmt.Sprintf("%.3f", ms(sv))
		}
		if kok {
			cells[2] = fmt.Sprintf("%.3f", ms(kv))
		}
		if sok && kok && kv > 0 {
			ratio := float64(sv) / float64(kv)
			cells[3] = fmt.Sprintf("%.2fx", ratio)
			if rw.target {
				cells[5] = "meets"
				if ratio > 1 {
					cells[5] = "above"
				}
			}
		}
		for _, c := range cells {
			fmt.Fprintf(tw, "%s\t", c)
		}
		fmt.Fprintln(tw)
	}
	fast := func(rs []round) string {
		n := 0
		for _, r := range rs {
			if r.rebalance < fastRebalance {
				n++
			}
		}
		return fmt.Sprintf("%d/%d", n, len(rs))
	}
	fmt.Fprintf(tw, "rebalances under %v (no heartbeat wait)\t%s\t%s\t\t\t\t\n", fastRebalance, fast(s), fast(k))
	_ = tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
