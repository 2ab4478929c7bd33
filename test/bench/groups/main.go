// Command groups benchmarks Strata's group coordinator against franz-go's
// kfake in the same run (issue 3, item 6):
//
//   - OffsetCommit latency: -commits sequential commits (after -warmup
//     unmeasured ones) of -commit-partitions partitions, round trip p50 and
//     p99;
//   - rebalance time: -members franz-go group consumers (cooperative-sticky,
//     100 ms heartbeats) start at once on a topic of as many partitions;
//     the time from the first start until every member owns one partition,
//     median over -rounds (5) fresh groups.
//
// and prints a table with the strata/kfake ratios (target: ≤ 1 for the
// commit p99 and the rebalance time). Strata runs in this process with
// group.initial.rebalance.delay.ms=0 (kfake has no such delay), a single
// broker, so each commit is acknowledged as soon as it is appended. It
// exits non-zero only when a measure fails.
//
// Concurrency: systems run one after the other; each group member polls
// on its own goroutine, and main waits on their assignment callbacks.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"
)

// options are the command-line settings.
type options struct {
	commits, warmup, commitPartitions int
	members, rounds                   int
	timeout                           time.Duration
	verbose                           bool
}

func main() {
	var o options
	flag.IntVar(&o.commits, "commits", 2000, "measured sequential OffsetCommits")
	flag.IntVar(&o.warmup, "warmup", 100, "unmeasured OffsetCommits first")
	flag.IntVar(&o.commitPartitions, "commit-partitions", 4, "partitions per OffsetCommit")
	flag.IntVar(&o.members, "members", 10, "members of the rebalancing group (and partitions of its topic)")
	flag.IntVar(&o.rounds, "rounds", 5, "rebalance rounds (fresh groups); the median is shown")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound of one rebalance round")
	flag.BoolVar(&o.verbose, "v", false, "log Strata at info level")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Printf("bench groups: %d OffsetCommits × %d partitions (sequential, after %d warmup), %d-member join × %d rounds, GOMAXPROCS %d, %s\n",
		o.commits, o.commitPartitions, o.warmup, o.members, o.rounds, runtime.GOMAXPROCS(0), runtime.Version())
	systems := []struct {
		name  string
		start func(context.Context, bool) (*system, error)
	}{{"strata", startStrata}, {"kfake", startKfake}}
	results := map[string]*result{}
	failed := false
	for _, s := range systems {
		r, err := run(ctx, s.name, s.start, o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, err)
			failed = true
			continue
		}
		results[s.name] = r
	}
	printTable(results)
	if failed {
		os.Exit(1)
	}
}

// run starts one system and takes its measures.
func run(ctx context.Context, name string, start func(context.Context, bool) (*system, error), o options) (r *result, err error) {
	sys, err := start(ctx, o.verbose)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := sys.stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	const commitTopic, groupTopic = "bench-commit", "bench-group"
	id, err := createTopic(ctx, sys.addr, commitTopic, int32(o.commitPartitions))
	if err != nil {
		return nil, err
	}
	if _, err := createTopic(ctx, sys.addr, groupTopic, int32(o.members)); err != nil {
		return nil, err
	}
	r = &result{}
	if r.commitP50, r.commitP99, err = measureCommits(ctx, sys.addr, commitTopic, id, o.commitPartitions, o.warmup, o.commits); err != nil {
		return nil, err
	}
	for i := range o.rounds {
		d, err := measureRebalance(ctx, sys.addr, groupTopic, fmt.Sprintf("bench-group-%d", i), o.members, o.members, o.timeout)
		if err != nil {
			return nil, err
		}
		r.rebalance = append(r.rebalance, d)
	}
	fmt.Printf("%s: commit p50 %s p99 %s; rebalance rounds %v\n", name, r.commitP50, r.commitP99, r.rebalance)
	return r, nil
}

// printTable writes the strata vs kfake table.
func printTable(results map[string]*result) {
	type row struct {
		name   string
		target bool // strata/kfake ≤ 1 is the target
		value  func(*result) time.Duration
	}
	rows := []row{
		{"OffsetCommit p50 ms", false, func(r *result) time.Duration { return r.commitP50 }},
		{"OffsetCommit p99 ms", true, func(r *result) time.Duration { return r.commitP99 }},
		{"rebalance to all assigned ms", true, func(r *result) time.Duration {
			s := slices.Sorted(slices.Values(r.rebalance))
			return s[len(s)/2]
		}},
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tstrata\tkfake\tstrata/kfake\ttarget\t\t")
	for _, rw := range rows {
		cells := []string{rw.name, "error", "error", "-", "-", ""}
		if rw.target {
			cells[4] = "≤ 1.0x"
		}
		s, k := results["strata"], results["kfake"]
		if s != nil {
			cells[1] = fmt.Sprintf("%.3f", ms(rw.value(s)))
		}
		if k != nil {
			cells[2] = fmt.Sprintf("%.3f", ms(rw.value(k)))
		}
		if s != nil && k != nil && rw.value(k) > 0 {
			ratio := float64(rw.value(s)) / float64(rw.value(k))
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
	_ = tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
