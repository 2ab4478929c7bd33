package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/strata-broker/strata/internal/benchhook"
	"github.com/strata-broker/strata/perf"
)

// validationTarget is the least validated/unchecked ratio of compressed
// produce throughput the broker aims at.
const validationTarget = 0.85

// compressedRun is one strata produce run of compressed batches, with
// the broker checking their records (validated) or not (unchecked, the
// broker's path before it did).
type compressedRun struct {
	codec     string
	validated bool
	produce   perf.Result
	err       error
}

// runCompressed starts a fresh strata broker with compressed-record
// validation on or off and produces the workload compressed with codec.
// The switch is a bench-only hook, read by the broker in this process.
func runCompressed(ctx context.Context, codec string, validated bool, round int, o benchOptions) (r compressedRun) {
	r.codec, r.validated = codec, validated
	benchhook.SkipCompressedRecords.Store(!validated)
	defer benchhook.SkipCompressedRecords.Store(false)
	r.err = onFresh(ctx, startStrata, o, func(sys *system) error {
		r.produce, r.err = produceCompressed(ctx, sys, codec, validated, round, o)
		return r.err
	})
	return r
}

// produceCompressed produces the workload compressed with codec to sys.
func produceCompressed(ctx context.Context, sys *system, codec string, validated bool, round int, o benchOptions) (res perf.Result, err error) {
	pctx, cancel := context.WithTimeout(ctx, o.phaseTimeout+30*time.Second)
	defer cancel()
	profile := o.cpuprofile != "" && round == 0
	res, err = profiled(profile, o.cpuprofile, "produce-"+codec+"-"+mode(validated), func() (perf.Result, error) {
		return perf.Produce(pctx, perf.ProduceOptions{
			Brokers: sys.brokers, Topic: topic, RecordSize: o.recordSize, Records: o.records,
			Duration: o.phaseTimeout, Partitions: o.partitions, ReplicationFactor: 1, Linger: o.linger,
			Compression: codec,
		})
	})
	fmt.Printf("round %d strata %s %-9s %s\n", round+1, codec, mode(validated), res)
	if err == nil && res.Records < o.records {
		err = fmt.Errorf("bench: produce acknowledged %d of %d records within %s", res.Records, o.records, o.phaseTimeout)
	}
	return res, err
}

func mode(validated bool) string {
	if validated {
		return "validated"
	}
	return "unchecked"
}

// compressedMedian is the median produce MB/s of the successful runs of
// codec in the given mode.
func compressedMedian(runs []compressedRun, codec string, validated bool) (float64, bool) {
	var rs []runResult
	for _, r := range runs {
		if r.codec == codec && r.validated == validated {
			rs = append(rs, runResult{produce: r.produce, err: r.err})
		}
	}
	return median(rs, metrics[0])
}

// printCompressedTable writes, per codec, the median produce throughput
// with and without validation and their ratio against the target.
func printCompressedTable(w io.Writer, codecs []string, runs []compressedRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "compressed produce MB/s\tunchecked\tvalidated\tvalidated/unchecked\ttarget\t\t")
	for _, c := range codecs {
		u, uok := compressedMedian(runs, c, false)
		v, vok := compressedMedian(runs, c, true)
		ratioRow(tw, c, u, uok, v, vok, validationTarget)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "strata only, medians over rounds; unchecked = the broker does not look inside compressed batches (bench-only switch)")
}
