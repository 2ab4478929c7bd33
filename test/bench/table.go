package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// metric is one row of the comparison table.
type metric struct {
	name   string
	value  func(runResult) float64
	target float64 // minimum strata/kfake ratio; 0 = no target
}

var metrics = []metric{
	{"produce MB/s", func(r runResult) float64 { return r.produce.MBPerSec() }, 1.5},
	{"consume MB/s", func(r runResult) float64 { return r.consume.MBPerSec() }, 2},
	{"produce records/s", func(r runResult) float64 { return r.produce.RecordsPerSec() }, 0},
	{"consume records/s", func(r runResult) float64 { return r.consume.RecordsPerSec() }, 0},
	{"produce p50 ms", func(r runResult) float64 { return ms(r.produce.LatencyP50) }, 0},
	{"produce p99 ms", func(r runResult) float64 { return ms(r.produce.LatencyP99) }, 0},
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median of the successful runs' values of m; ok is false when none
// succeeded.
func median(runs []runResult, m metric) (v float64, ok bool) {
	var vals []float64
	for _, r := range runs {
		if r.err == nil {
			vals = append(vals, m.value(r))
		}
	}
	return medianOf(vals)
}

// medianOf is the median of vals; ok is false when there are none.
func medianOf(vals []float64) (v float64, ok bool) {
	if len(vals) == 0 {
		return 0, false
	}
	slices.Sort(vals)
	mid := len(vals) / 2
	if len(vals)%2 == 0 {
		return (vals[mid-1] + vals[mid]) / 2, true
	}
	return vals[mid], true
}

// printTable writes the strata vs kfake table of medians over the
// successful rounds.
func printTable(w io.Writer, results map[string][]runResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tstrata\tkfake\tstrata/kfake\ttarget\t\t")
	for _, m := range metrics {
		s, sok := median(results["strata"], m)
		k, kok := median(results["kfake"], m)
		row := []string{m.name, cell(results["strata"], s, sok), cell(results["kfake"], k, kok), "-", "-", ""}
		if sok && kok && k > 0 {
			ratio := s / k
			row[3] = fmt.Sprintf("%.2fx", ratio)
			if m.target > 0 {
				row[4] = fmt.Sprintf("≥ %.1fx", m.target)
				row[5] = "below"
				if ratio >= m.target {
					row[5] = "meets"
				}
			}
		}
		for _, c := range row {
			fmt.Fprintf(tw, "%s\t", c)
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "medians over %d strata and %d kfake successful round(s); MB = 2^20 bytes; latency is per record, Produce call to ack\n",
		ok(results["strata"]), ok(results["kfake"]))
}

// cell formats a table value: "-" when the system was not run, "error"
// when none of its runs succeeded.
func cell(runs []runResult, v float64, ok bool) string {
	switch {
	case len(runs) == 0:
		return "-"
	case !ok:
		return "error"
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// ok counts the successful runs.
func ok(runs []runResult) int {
	n := 0
	for _, r := range runs {
		if r.err == nil {
			n++
		}
	}
	return n
}

// ratioRow writes one row of a ratio table: name, the peer's value, the
// measured value, measured/peer, the target and whether it is met; a
// value that did not succeed prints "error".
func ratioRow(w io.Writer, name string, peer float64, peerOK bool, v float64, vOK bool, target float64) {
	row := []string{name, "error", "error", "-", fmt.Sprintf("≥ %.2fx", target), ""}
	if peerOK {
		row[1] = fmt.Sprintf("%.2f", peer)
	}
	if vOK {
		row[2] = fmt.Sprintf("%.2f", v)
	}
	if peerOK && vOK && peer > 0 {
		row[3] = fmt.Sprintf("%.2fx", v/peer)
		row[5] = "below"
		if v/peer >= target {
			row[5] = "meets"
		}
	}
	for _, cell := range row {
		fmt.Fprintf(w, "%s\t", cell)
	}
	fmt.Fprintln(w)
}
