package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/strata-broker/strata/perf"
)

// Targets of the transactions table.
const (
	txnProduceTarget   = 0.8 // transactional / idempotent produce MB/s, strata
	readCommitedTarget = 0.9 // read_committed / read_uncommitted consume MB/s, strata
	txnVsKfakeTarget   = 1.5 // strata / kfake transactional produce MB/s
)

// txnRun is one round of the transactions workload on one system: an
// idempotent produce and a transactional one (commit every
// perf.DefaultCommitEvery records) to their own topics, then the
// transactional topic consumed read_uncommitted and read_committed, each
// pair in alternating order. kfake runs the transactional produce only.
type txnRun struct {
	system    string
	idem, txn perf.Result
	ru, rc    perf.Result
	err       error
}

// runTxn starts a fresh system and runs the transactions workload on it.
func runTxn(ctx context.Context, name string, round int, o benchOptions) (r txnRun) {
	r.system = name
	r.err = onFresh(ctx, starters[name], o, func(sys *system) error {
		r = txnWorkload(ctx, sys, name, round, o)
		return r.err
	})
	return r
}

// txnWorkload runs the transactions workload on sys.
func txnWorkload(ctx context.Context, sys *system, name string, round int, o benchOptions) (r txnRun) {
	r.system = name
	pctx, cancel := context.WithTimeout(ctx, 4*o.phaseTimeout+30*time.Second)
	defer cancel()
	produce := func(topic, txnID string) (perf.Result, error) {
		res, err := perf.Produce(pctx, perf.ProduceOptions{
			Brokers: sys.brokers, Topic: topic, RecordSize: o.recordSize, Records: o.records,
			Duration: o.phaseTimeout, Partitions: o.partitions, ReplicationFactor: 1, Linger: o.linger,
			TransactionalID: txnID,
		})
		fmt.Printf("round %d %-6s %-13s %s\n", round+1, name, modeName(txnID != ""), res)
		if err == nil && res.Records < o.records {
			err = fmt.Errorf("bench: produce acknowledged %d of %d records within %s", res.Records, o.records, o.phaseTimeout)
		}
		return res, err
	}
	if name != "strata" {
		r.txn, r.err = produce("bench-txn", fmt.Sprintf("bench-%d", round))
		return r
	}
	// Alternate which produce goes first (the second writes into a page
	// cache the first filled), every other round so that the consumers'
	// order, alternated every round, meets both.
	for i := range 2 {
		if (round/2+i)%2 == 0 {
			r.txn, r.err = produce("bench-txn", fmt.Sprintf("bench-%d", round))
		} else {
			r.idem, r.err = produce("bench-idem", "")
		}
		if r.err != nil {
			return r
		}
	}
	for i := range 2 {
		committed := (round+i)%2 == 1
		// Round 2 reads read_committed first: its consumes are profiled.
		profile := o.cpuprofile != "" && round == 1
		res, err := profiled(profile, o.cpuprofile, "consume-"+isolationName(committed), func() (perf.Result, error) {
			return perf.Consume(pctx, perf.ConsumeOptions{
				Brokers: sys.brokers, Topic: "bench-txn", Records: r.txn.Records, Duration: o.phaseTimeout,
				ReadCommitted: committed,
			})
		})
		fmt.Printf("round %d %-6s %-16s %s\n", round+1, name, isolationName(committed), res)
		if err == nil && res.Records < r.txn.Records {
			err = fmt.Errorf("bench: consume read %d of %d records within %s", res.Records, r.txn.Records, o.phaseTimeout)
		}
		if err != nil {
			r.err = err
			return r
		}
		if committed {
			r.rc = res
		} else {
			r.ru = res
		}
	}
	return r
}

func modeName(txn bool) string {
	if txn {
		return "transactional"
	}
	return "idempotent"
}

func isolationName(committed bool) string {
	if committed {
		return "read_committed"
	}
	return "read_uncommitted"
}

// runTxnRounds runs the transactions workload on strata and kfake every
// round, in alternating order.
func runTxnRounds(ctx context.Context, o benchOptions) []txnRun {
	var runs []txnRun
	for round := range o.rounds {
		order := []string{"strata", "kfake"}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, name := range order {
			r := runTxn(ctx, name, round, o)
			if r.err != nil {
				fmt.Printf("round %d %s transactions ERROR: %v\n", round+1, name, r.err)
			}
			runs = append(runs, r)
			if ctx.Err() != nil {
				return runs
			}
		}
	}
	return runs
}

// txnMedian is the median of v over the successful runs of system.
func txnMedian(runs []txnRun, system string, v func(txnRun) float64) (float64, bool) {
	var vals []float64
	for _, r := range runs {
		if r.system == system && r.err == nil {
			vals = append(vals, v(r))
		}
	}
	return medianOf(vals)
}

// printTxnTable writes the transactions table: three ratios against
// their targets, and the commit (EndTxn) latency on one broker.
func printTxnTable(w io.Writer, runs []txnRun) {
	mb := func(f func(txnRun) perf.Result) func(txnRun) float64 {
		return func(r txnRun) float64 { return f(r).MBPerSec() }
	}
	idem, iok := txnMedian(runs, "strata", mb(func(r txnRun) perf.Result { return r.idem }))
	txn, tok := txnMedian(runs, "strata", mb(func(r txnRun) perf.Result { return r.txn }))
	ru, uok := txnMedian(runs, "strata", mb(func(r txnRun) perf.Result { return r.ru }))
	rc, cok := txnMedian(runs, "strata", mb(func(r txnRun) perf.Result { return r.rc }))
	kf, kok := txnMedian(runs, "kfake", mb(func(r txnRun) perf.Result { return r.txn }))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "transactions MB/s\tpeer\tmeasured\tratio\ttarget\t\t")
	ratioRow(tw, "strata txn produce / idempotent", idem, iok, txn, tok, txnProduceTarget)
	ratioRow(tw, "strata read_committed / read_uncommitted", ru, uok, rc, cok, readCommitedTarget)
	ratioRow(tw, "txn produce strata / kfake", kf, kok, txn, tok, txnVsKfakeTarget)
	_ = tw.Flush()
	p50, _ := txnMedian(runs, "strata", func(r txnRun) float64 { return ms(r.txn.EndTxnP50) })
	p99, _ := txnMedian(runs, "strata", func(r txnRun) float64 { return ms(r.txn.EndTxnP99) })
	fmt.Fprintf(w, "strata EndTxn (commit every %d records, after the flush) on one broker: p50 %.2f ms, p99 %.2f ms; medians over rounds\n",
		perf.DefaultCommitEvery, p50, p99)
}
