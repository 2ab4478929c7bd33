package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-broker/strata/internal/benchhook"
	"github.com/strata-broker/strata/internal/testcerts"
	"github.com/strata-broker/strata/perf"
)

// Targets and sizes of the security table.
const (
	tlsTarget       = 0.7 // TLS / plaintext produce and consume MB/s, strata
	scramHandshakes = 100 // timed connections per round, each kind
	scramUser       = "bench"
	scramPassword   = "bench-pw"
	scramIterations = 4096 // Kafka's minimum, and its tools' default
)

// tlsRun is one round of the security workload on one fresh strata
// broker with a PLAINTEXT, an SSL and a SASL_PLAINTEXT (SCRAM-SHA-512)
// listener: the workload produced and consumed over PLAINTEXT and over
// SSL to their own topics, in alternating order, then the connection
// times of plaintext clients and of SCRAM-SHA-512 clients, interleaved.
type tlsRun struct {
	plain, tls     runResult
	bare           runResult // over TLS without wire.TLSBase (-tls-bare)
	connect, scram perf.Histogram
	err            error
}

// tmpfsDir is where the security table keeps its brokers' data when
// -dir is not given and it has room: in memory, so that the page cache
// writing back a gigabyte or two to a disk does not decide a ratio of
// CPU costs.
const tmpfsDir = "/dev/shm"

// runTLSRounds runs the security workload in an even number of rounds
// (-rounds, rounded up), so that as many rounds start with TLS as with
// plaintext.
func runTLSRounds(ctx context.Context, o benchOptions) []tlsRun {
	if o.dir == "" {
		// Two topics of the workload, with room to spare.
		need := 3 * uint64(o.records) * uint64(o.recordSize+100)
		var st syscall.Statfs_t
		if err := syscall.Statfs(tmpfsDir, &st); err == nil && st.Bavail*uint64(st.Bsize) >= need {
			o.dir = tmpfsDir
		}
	}
	rounds := o.rounds + o.rounds%2
	fmt.Printf("bench: security table: %d rounds, data in %s\n", rounds, cmp.Or(o.dir, os.TempDir()))
	var runs []tlsRun
	for round := range rounds {
		r := runTLS(ctx, round, o)
		if r.err != nil {
			fmt.Printf("round %d strata security ERROR: %v\n", round+1, r.err)
		}
		runs = append(runs, r)
		if ctx.Err() != nil {
			break
		}
	}
	return runs
}

// runTLS starts a fresh strata broker with a certificate made for this
// run and runs the security workload on it.
func runTLS(ctx context.Context, round int, o benchOptions) (r tlsRun) {
	dir, err := os.MkdirTemp(o.dir, "strata-bench-certs-")
	if err != nil {
		r.err = fmt.Errorf("bench: temp dir: %w", err)
		return r
	}
	defer os.RemoveAll(dir)
	ca, keystore, err := benchCerts(dir)
	if err != nil {
		r.err = err
		return r
	}
	keys := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL:SASL_PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          keystore,
		"sasl.enabled.mechanisms":        "SCRAM-SHA-512",
	}
	start := func(ctx context.Context, o benchOptions) (*system, error) { return startStrataWith(ctx, o, keys) }
	r.err = onFresh(ctx, start, o, func(sys *system) error {
		secure := &system{brokers: []string{sys.strata.ListenerAddr("SSL")}, tls: &tls.Config{RootCAs: ca.Pool()}}
		if round == 0 {
			if err := printNegotiated(secure); err != nil {
				return err
			}
		}
		for _, v := range tlsOrder(round, o.tlsBare) {
			var res *runResult
			switch v {
			case "plain":
				res = &r.plain
				*res = produceConsume(ctx, sys, v, "bench-plain", round, o)
			case "tls":
				res = &r.tls
				*res = produceConsume(ctx, secure, v, "bench-tls", round, o)
			case "bare":
				res = &r.bare
				benchhook.BareTLS.Store(true)
				*res = produceConsume(ctx, secure, v, "bench-bare", round, o)
				benchhook.BareTLS.Store(false)
			}
			if res.err != nil {
				return res.err
			}
		}
		return timeHandshakes(ctx, sys, &r)
	})
	return r
}

// tlsOrder is the order of a round's phases: plaintext first or last
// by turns and, with bare, the two TLS phases next to each other, each
// first in half of every four rounds.
func tlsOrder(round int, bare bool) []string {
	seq := []string{"plain", "tls"}
	if bare {
		seq = append(seq, "bare")
		if (round/2)%2 == 1 {
			seq[1], seq[2] = seq[2], seq[1]
		}
	}
	if round%2 == 1 {
		slices.Reverse(seq)
	}
	return seq
}

// printNegotiated prints the TLS version and cipher suite a client
// with sys's configuration (Go's defaults, as franz-go's) and the
// broker agree on.
func printNegotiated(sys *system) error {
	c, err := tls.Dial("tcp", sys.brokers[0], sys.tls)
	if err != nil {
		return fmt.Errorf("bench: TLS dial: %w", err)
	}
	st := c.ConnectionState()
	fmt.Printf("bench: TLS negotiated %s, %s\n", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
	return c.Close()
}

// benchCerts makes a CA and a certificate for 127.0.0.1 and writes the
// broker's key store into dir.
func benchCerts(dir string) (*testcerts.CA, string, error) {
	ca, err := testcerts.NewCA("Strata Bench CA")
	if err != nil {
		return nil, "", fmt.Errorf("bench: test CA: %w", err)
	}
	pair, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		return nil, "", fmt.Errorf("bench: broker certificate: %w", err)
	}
	keystore, err := testcerts.WriteFile(dir, "broker.pem", pair.Keystore())
	if err != nil {
		return nil, "", fmt.Errorf("bench: key store: %w", err)
	}
	return ca, keystore, nil
}

// timeHandshakes creates the SCRAM-SHA-512 user, then times
// scramHandshakes fresh connections of each kind, interleaved: a
// plaintext client and a SCRAM-SHA-512 one, each from dial to its first
// Metadata response (for SCRAM: ApiVersions, SaslHandshake, two
// SaslAuthenticate round trips, then Metadata).
func timeHandshakes(ctx context.Context, sys *system, r *tlsRun) error {
	if err := createScramUser(ctx, sys.brokers); err != nil {
		return err
	}
	plainAddr, saslAddr := sys.strata.ListenerAddr("PLAINTEXT"), sys.strata.ListenerAddr("SASL")
	mech := scram.Auth{User: scramUser, Pass: scramPassword}.AsSha512Mechanism()
	// The credential is written through etcd: wait until the broker
	// accepts it before timing.
	deadline := time.Now().Add(startTimeout)
	for {
		_, err := connectOnce(ctx, saslAddr, mech)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("bench: SCRAM-SHA-512 authentication not accepted within %s: %w", startTimeout, err)
		}
	}
	for range scramHandshakes {
		d, err := connectOnce(ctx, plainAddr, nil)
		if err != nil {
			return fmt.Errorf("bench: plaintext connection: %w", err)
		}
		r.connect.Record(d)
		if d, err = connectOnce(ctx, saslAddr, mech); err != nil {
			return fmt.Errorf("bench: SCRAM-SHA-512 connection: %w", err)
		}
		r.scram.Record(d)
	}
	fmt.Printf("strata connect to Metadata: plaintext p50 %.2f ms p99 %.2f ms, SCRAM-SHA-512 p50 %.2f ms p99 %.2f ms (%d each)\n",
		ms(r.connect.Quantile(0.5)), ms(r.connect.Quantile(0.99)), ms(r.scram.Quantile(0.5)), ms(r.scram.Quantile(0.99)), scramHandshakes)
	return nil
}

// createScramUser sets the bench user's SCRAM-SHA-512 password, salted
// and hashed client-side by kadm.
func createScramUser(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("bench: admin client: %w", err)
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: scramUser, Mechanism: kadm.ScramSha512, Iterations: scramIterations, Password: scramPassword},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("bench: create SCRAM user: %w", err)
	}
	return nil
}

// connectOnce times a fresh client, authenticating with mech unless it
// is nil, from creation to its first Metadata response.
func connectOnce(ctx context.Context, addr string, mech sasl.Mechanism) (time.Duration, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	start := time.Now()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = cl.Ping(pctx)
	return time.Since(start), err
}

// tlsMedian is the median of v over the successful runs.
func tlsMedian(runs []tlsRun, v func(tlsRun) float64) (float64, bool) {
	var vals []float64
	for _, r := range runs {
		if r.err == nil {
			vals = append(vals, v(r))
		}
	}
	return medianOf(vals)
}

// printTLSTable writes the security table: TLS against plaintext
// produce and consume throughput against the target, the CPU time per
// MB behind them, and the cost of a SCRAM-SHA-512 connection against a
// plaintext one. A ratio is the median of the rounds' own ratios, each
// between two phases run back to back on one broker, so that a slow
// stretch of a shared machine moves both sides of a ratio together.
func printTLSTable(w io.Writer, runs []tlsRun) {
	mb := func(side func(tlsRun) runResult, f func(runResult) perf.Result) func(tlsRun) float64 {
		return func(r tlsRun) float64 { return f(side(r)).MBPerSec() }
	}
	// cpu is the process's CPU milliseconds per MB of a phase.
	cpu := func(side func(tlsRun) runResult, f func(runResult) (perf.Result, time.Duration)) func(tlsRun) float64 {
		return func(r tlsRun) float64 {
			res, d := f(side(r))
			if res.Bytes <= 0 {
				return 0
			}
			return ms(d) / (float64(res.Bytes) / (1 << 20))
		}
	}
	plain := func(r tlsRun) runResult { return r.plain }
	secure := func(r tlsRun) runResult { return r.tls }
	produce := func(r runResult) perf.Result { return r.produce }
	consume := func(r runResult) perf.Result { return r.consume }
	produceCPU := func(r runResult) (perf.Result, time.Duration) { return r.produce, r.produceCPU }
	consumeCPU := func(r runResult) (perf.Result, time.Duration) { return r.consume, r.consumeCPU }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "security\tplaintext\tTLS\tTLS/plaintext\ttarget\t\t")
	tlsRow(tw, runs, "strata produce MB/s", mb(plain, produce), mb(secure, produce), false, tlsTarget)
	tlsRow(tw, runs, "strata consume MB/s", mb(plain, consume), mb(secure, consume), false, tlsTarget)
	tlsRow(tw, runs, "produce CPU ms/MB", cpu(plain, produceCPU), cpu(secure, produceCPU), true, 0)
	tlsRow(tw, runs, "consume CPU ms/MB", cpu(plain, consumeCPU), cpu(secure, consumeCPU), true, 0)
	if slices.ContainsFunc(runs, func(r tlsRun) bool { return r.bare.produce.Records > 0 }) {
		bare := func(r tlsRun) runResult { return r.bare }
		fmt.Fprintln(tw, "TLSBase\tbare TLS\tTLS\tTLS/bare\t\t\t")
		tlsRow(tw, runs, "strata produce MB/s", mb(bare, produce), mb(secure, produce), false, 0)
		tlsRow(tw, runs, "strata consume MB/s", mb(bare, consume), mb(secure, consume), false, 0)
		tlsRow(tw, runs, "produce CPU ms/MB", cpu(bare, produceCPU), cpu(secure, produceCPU), true, 0)
		tlsRow(tw, runs, "consume CPU ms/MB", cpu(bare, consumeCPU), cpu(secure, consumeCPU), true, 0)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "medians over %d successful round(s); a ratio is the median of the rounds' ratios; CPU is this process's (client and broker), its ratio plaintext/TLS (the throughput ratio when CPU-bound)\n",
		func() int {
			n := 0
			for _, r := range runs {
				if r.err == nil {
					n++
				}
			}
			return n
		}())
	q := func(h func(*tlsRun) *perf.Histogram, q float64) float64 {
		v, _ := tlsMedian(runs, func(r tlsRun) float64 { return ms(h(&r).Quantile(q)) })
		return v
	}
	conn := func(r *tlsRun) *perf.Histogram { return &r.connect }
	scr := func(r *tlsRun) *perf.Histogram { return &r.scram }
	fmt.Fprintf(w, "strata connect to first Metadata (%d per round): plaintext p50 %.2f ms, p99 %.2f ms; SCRAM-SHA-512 (%d iterations) p50 %.2f ms, p99 %.2f ms; medians over rounds\n",
		scramHandshakes, q(conn, 0.5), q(conn, 0.99), scramIterations, q(scr, 0.5), q(scr, 0.99))
}

// tlsRow writes one row of the security table: the medians of the
// plaintext (or bare TLS) and the TLS values over the successful runs and
// the median of the runs' TLS/plaintext ratios (plaintext/TLS when
// inverse: for a cost), against target when it is positive.
func tlsRow(w io.Writer, runs []tlsRun, name string, plain, secure func(tlsRun) float64, inverse bool, target float64) {
	p, pok := tlsMedian(runs, plain)
	t, tok := tlsMedian(runs, secure)
	ratio, rok := tlsMedian(runs, func(r tlsRun) float64 {
		a, b := secure(r), plain(r)
		if inverse {
			a, b = b, a
		}
		if b <= 0 {
			return 0
		}
		return a / b
	})
	row := []string{name, "error", "error", "-", "-", ""}
	if pok {
		row[1] = fmt.Sprintf("%.2f", p)
	}
	if tok {
		row[2] = fmt.Sprintf("%.2f", t)
	}
	if rok && pok && tok {
		row[3] = fmt.Sprintf("%.2fx", ratio)
		if target > 0 {
			row[4] = fmt.Sprintf("≥ %.2fx", target)
			row[5] = "below"
			if ratio >= target {
				row[5] = "meets"
			}
		}
	}
	for _, cell := range row {
		fmt.Fprintf(w, "%s\t", cell)
	}
	fmt.Fprintln(w)
}
