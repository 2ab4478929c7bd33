package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-broker/strata/perf"
)

func TestMedianSkipsFailedRuns(t *testing.T) {
	m := metrics[0] // produce MB/s
	run := func(mbps float64, err error) runResult {
		return runResult{produce: perf.Result{Bytes: int64(mbps * (1 << 20)), Elapsed: time.Second}, err: err}
	}
	runs := []runResult{run(10, nil), run(1000, errors.New("x")), run(30, nil), run(20, nil)}
	if v, ok := median(runs, m); !ok || v != 20 {
		t.Fatalf("odd median = %v, %v; want 20", v, ok)
	}
	if v, ok := median(runs[:3], m); !ok || v != 20 {
		t.Fatalf("even median = %v, %v; want 20", v, ok)
	}
	if _, ok := median(runs[1:2], m); ok {
		t.Fatal("median of failed runs only should not be ok")
	}
}

func TestPrintTable(t *testing.T) {
	res := func(mb float64) runResult {
		b := int64(mb * (1 << 20))
		return runResult{
			produce: perf.Result{Records: 1, Bytes: b, Elapsed: time.Second, LatencyP50: time.Millisecond, LatencyP99: 2 * time.Millisecond},
			consume: perf.Result{Records: 1, Bytes: b, Elapsed: time.Second / 2},
		}
	}
	var out bytes.Buffer
	printTable(&out, map[string][]runResult{"strata": {res(300)}, "kfake": {res(100)}})
	s := out.String()
	for _, want := range []string{"produce MB/s", "3.00x", "meets", "≥ 1.5x", "produce p99 ms"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	printTable(&out, map[string][]runResult{"strata": {{err: errors.New("boom")}}})
	if s := out.String(); !strings.Contains(s, "error") || strings.Contains(s, "meets") {
		t.Errorf("table of a failed strata run:\n%s", s)
	}
}

func TestParseFlagsAndProfilePath(t *testing.T) {
	o, err := parseFlags([]string{"-records", "10", "-systems", "kfake"})
	if err != nil || o.records != 10 || len(o.systems) != 1 || o.rounds != 3 {
		t.Fatalf("parseFlags = %+v, %v", o, err)
	}
	if len(o.codecs) != 2 || o.codecs[0] != "lz4" {
		t.Fatalf("default codecs %q", o.codecs)
	}
	if o, err := parseFlags([]string{"-codecs", ""}); err != nil || len(o.codecs) != 0 {
		t.Fatalf("-codecs '': %q, %v", o.codecs, err)
	}
	if o, err := parseFlags([]string{"-systems", "", "-codecs", "", "-txn=false"}); err != nil || len(o.systems) != 0 || !o.tls {
		t.Fatalf("-systems '' (the security table alone): %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"-systems", "nope"}, {"-systems", "", "-codecs", "", "-txn=false", "-tls=false"}, {"-records", "0"}, {"-rounds", "0"}, {"x"}, {"-codecs", "brotli"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
	if got := profilePath("/tmp/cpu.pprof", "produce"); got != "/tmp/cpu-produce.pprof" {
		t.Errorf("profilePath = %q", got)
	}
}

func TestRunOnceKfake(t *testing.T) {
	o, err := parseFlags([]string{"-records", "2000", "-record-size", "100", "-systems", "kfake"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := runOnce(ctx, "kfake", 0, o)
	if r.err != nil || r.produce.Records != 2000 || r.consume.Records != 2000 {
		t.Fatalf("runOnce: %+v", r)
	}
}

func TestPrintCompressedTable(t *testing.T) {
	run := func(codec string, validated bool, mb float64) compressedRun {
		return compressedRun{codec: codec, validated: validated, produce: perf.Result{Records: 1, Bytes: int64(mb * (1 << 20)), Elapsed: time.Second}}
	}
	runs := []compressedRun{run("lz4", false, 100), run("lz4", true, 90), run("zstd", false, 100), run("zstd", true, 50),
		{codec: "zstd", validated: true, err: errors.New("boom")}}
	var out bytes.Buffer
	printCompressedTable(&out, []string{"lz4", "zstd"}, runs)
	s := out.String()
	for _, want := range []string{"0.90x", "meets", "0.50x", "below", "≥ 0.85x"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

func TestPrintTxnTable(t *testing.T) {
	mb := func(v float64) perf.Result {
		return perf.Result{Records: 1, Bytes: int64(v * (1 << 20)), Elapsed: time.Second, EndTxnP50: time.Millisecond, EndTxnP99: 3 * time.Millisecond}
	}
	runs := []txnRun{
		{system: "strata", idem: mb(100), txn: mb(90), ru: mb(200), rc: mb(150)},
		{system: "kfake", txn: mb(30)},
		{system: "strata", err: errors.New("boom"), txn: mb(1)},
	}
	var out bytes.Buffer
	printTxnTable(&out, runs)
	s := out.String()
	for _, want := range []string{"0.90x", "0.75x", "below", "3.00x", "meets", "p50 1.00 ms, p99 3.00 ms"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

func TestPrintTLSTable(t *testing.T) {
	mb := func(v float64) perf.Result {
		return perf.Result{Records: 1, Bytes: int64(v * (1 << 20)), Elapsed: time.Second}
	}
	run := tlsRun{
		plain: runResult{produce: mb(100), consume: mb(200), produceCPU: 500 * time.Millisecond, consumeCPU: time.Second},
		tls:   runResult{produce: mb(80), consume: mb(100), produceCPU: time.Second, consumeCPU: time.Second},
	}
	for range 10 {
		run.connect.Record(time.Millisecond)
		run.scram.Record(4 * time.Millisecond)
	}
	var out bytes.Buffer
	printTLSTable(&out, []tlsRun{run, {err: errors.New("boom")}})
	s := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"0.80x", "meets", "0.50x", "below", "≥ 0.70x", "SCRAM-SHA-512 (4096 iterations) p50 4.", "plaintext p50 1.",
		"produce CPU ms/MB 5.00 12.50 0.40x", "consume CPU ms/MB 5.00 10.00 0.50x"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

// TestTLSRatioIsMedianOfRounds: the ratio is the median of the rounds'
// own ratios, not the ratio of the medians (here 0.70x, against 0.90x).
func TestTLSRatioIsMedianOfRounds(t *testing.T) {
	mb := func(v float64) perf.Result {
		return perf.Result{Records: 1, Bytes: int64(v * (1 << 20)), Elapsed: time.Second}
	}
	round := func(plain, secure float64) tlsRun {
		return tlsRun{plain: runResult{produce: mb(plain), consume: mb(plain)}, tls: runResult{produce: mb(secure), consume: mb(secure)}}
	}
	// Ratios 0.9, 0.7, 0.7; medians 100 and 90.
	runs := []tlsRun{round(100, 90), round(50, 35), round(200, 140)}
	var out bytes.Buffer
	printTLSTable(&out, runs)
	s := strings.Join(strings.Fields(out.String()), " ")
	if !strings.Contains(s, "strata produce MB/s 100.00 90.00 0.70x") {
		t.Errorf("want the median of the rounds' ratios, 0.70x:\n%s", s)
	}
}

// TestTLSOrder: plaintext goes first and last by turns, and over four
// rounds each TLS phase precedes the other twice.
func TestTLSOrder(t *testing.T) {
	if got := tlsOrder(1, false); !slices.Equal(got, []string{"tls", "plain"}) {
		t.Errorf("round 2 without bare: %q", got)
	}
	first := map[string]int{}
	for round := range 4 {
		o := tlsOrder(round, true)
		if len(o) != 3 || (o[0] != "plain") == (round%2 == 0) {
			t.Errorf("round %d: %q", round+1, o)
		}
		if i, j := slices.Index(o, "tls"), slices.Index(o, "bare"); i < j {
			first["tls"]++
		} else {
			first["bare"]++
		}
	}
	if first["tls"] != 2 || first["bare"] != 2 {
		t.Errorf("TLS phases first: %v", first)
	}
}
