package perf

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Produce creates the topic if it is missing, then writes records to it
// from Concurrency clients until Records were issued or Duration passed,
// waits for every acknowledgement and reports throughput and per-record
// latency. On an error it stops issuing records, waits for those in flight
// and returns the partial Result with the first error.
func Produce(ctx context.Context, opts ProduceOptions) (Result, error) {
	res := Result{Op: opProduce}
	o, err := opts.withDefaults()
	if err != nil {
		return res, err
	}
	if err := ensureTopic(ctx, dialOpts(o.Brokers, o.TLS), o.Topic, o.Partitions, o.ReplicationFactor); err != nil {
		return res, err
	}
	run := &produceRun{opts: o, values: recordValues(o.RecordSize, o.Compression)}
	producers := make([]*producer, 0, o.Concurrency)
	defer func() {
		for _, p := range producers {
			p.cl.Close()
		}
	}()
	for i := range o.Concurrency {
		cl, err := kgo.NewClient(o.clientOpts(i)...)
		if err != nil {
			return res, fmt.Errorf("perf: producer client: %w", err)
		}
		producers = append(producers, &producer{cl: cl})
	}

	run.start = time.Now()
	if o.Duration > 0 {
		run.deadline = run.start.Add(o.Duration)
	}
	var wg sync.WaitGroup
	for _, p := range producers {
		wg.Go(func() { run.loop(ctx, p) })
	}
	wg.Wait()
	res.Elapsed = time.Since(run.start)

	var hist, commits Histogram
	for _, p := range producers {
		p.mu.Lock()
		hist.Merge(&p.hist)
		p.mu.Unlock()
		commits.Merge(&p.commits)
	}
	res.Txns = int64(commits.Count())
	res.EndTxnP50 = commits.Quantile(0.50)
	res.EndTxnP99 = commits.Quantile(0.99)
	res.Records = int64(hist.Count())
	res.Bytes = res.Records * int64(o.RecordSize)
	res.LatencyP50 = hist.Quantile(0.50)
	res.LatencyP99 = hist.Quantile(0.99)
	res.LatencyAvg = hist.Mean()
	res.LatencyMax = hist.Max()
	if err := run.err(); err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("perf: produce to %q: %w", o.Topic, err)
	}
	return res, nil
}

// recordValues are the values records take in turn. Uncompressed, one
// random value: random bytes defeat any compression. With a codec, 256
// values of random halves written twice, so that each compresses about
// 2:1 on its own while a batch's window (64 KiB for franz-go's lz4 and
// zstd) never holds a repeat of a whole value.
func recordValues(size int, codec string) [][]byte {
	if codec == "" || codec == "none" {
		v := make([]byte, size)
		_, _ = rand.Read(v) // never fails
		return [][]byte{v}
	}
	values := make([][]byte, 256)
	for i := range values {
		v := make([]byte, size)
		half := v[:(size+1)/2]
		_, _ = rand.Read(half)
		copy(v[len(half):], half)
		values[i] = v
	}
	return values
}

// clientOpts are the franz-go options of producer client i.
func (o ProduceOptions) clientOpts(i int) []kgo.Opt {
	linger := max(o.Linger, 0)
	opts := append(dialOpts(o.Brokers, o.TLS),
		kgo.DefaultProduceTopic(o.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codecs[o.Compression]),
		kgo.ProducerLinger(linger),
		kgo.RecordDeliveryTimeout(o.DeliveryTimeout),
	)
	if o.BatchMaxBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(min(o.BatchMaxBytes, 1<<30))))
	}
	if o.MaxBufferedRecords > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(o.MaxBufferedRecords))
	}
	if o.DisableIdempotence {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if id := o.TransactionalID; id != "" {
		if o.Concurrency > 1 {
			id = fmt.Sprintf("%s-%d", id, i)
		}
		opts = append(opts, kgo.TransactionalID(id))
	}
	return opts
}

// produceRun is the state the producer goroutines of one run share.
type produceRun struct {
	opts     ProduceOptions
	values   [][]byte  // the records' values, in turn; franz-go never writes to them
	start    time.Time // set before the goroutines start
	deadline time.Time // zero when there is no time bound
	issued   atomic.Int64
	failed   atomic.Bool

	mu       sync.Mutex
	firstErr error // guarded by mu
}

// producer is one client and the latencies of its acknowledged records
// and of its commits.
type producer struct {
	cl      *kgo.Client
	mu      sync.Mutex
	hist    Histogram // guarded by mu; written from franz-go's promise goroutines
	commits Histogram // written by the client's loop goroutine only
}

// fail records err if it is the run's first error and stops every loop.
func (r *produceRun) fail(err error) {
	r.mu.Lock()
	if r.firstErr == nil {
		r.firstErr = err
	}
	r.mu.Unlock()
	r.failed.Store(true)
}

func (r *produceRun) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstErr
}

// loop issues records on p until a bound is hit, then flushes. A
// transactional client begins a transaction first and ends it with a
// commit every CommitEvery records and after the last.
func (r *produceRun) loop(ctx context.Context, p *producer) {
	o := r.opts
	txn := o.TransactionalID != ""
	if txn && !r.begin(p) {
		return
	}
	rate := o.Throughput / float64(o.Concurrency) // records/s of this client
	var sent int64
	for !r.failed.Load() && ctx.Err() == nil {
		if o.Records > 0 && r.issued.Add(1) > o.Records {
			break
		}
		if rate > 0 && !r.pace(ctx, sent, rate) {
			break
		}
		now := time.Now()
		if !r.deadline.IsZero() && !now.Before(r.deadline) {
			break
		}
		if txn && sent > 0 && sent%o.CommitEvery == 0 && !(r.commit(ctx, p) && r.begin(p)) {
			return
		}
		sent++
		p.cl.Produce(ctx, &kgo.Record{Value: r.values[sent%int64(len(r.values))]}, func(_ *kgo.Record, err error) {
			if err != nil {
				r.fail(fmt.Errorf("perf: produce to %q: %w", o.Topic, err))
				return
			}
			lat := time.Since(now)
			p.mu.Lock()
			p.hist.Record(lat)
			p.mu.Unlock()
		})
	}
	if txn {
		r.commit(ctx, p)
		return
	}
	if err := p.cl.Flush(ctx); err != nil {
		r.fail(fmt.Errorf("perf: flush to %q: %w", o.Topic, err))
	}
}

// begin starts a transaction on p; false (the run failed) if it cannot.
func (r *produceRun) begin(p *producer) bool {
	if err := p.cl.BeginTransaction(); err != nil {
		r.fail(fmt.Errorf("perf: begin transaction: %w", err))
		return false
	}
	return true
}

// commit flushes p's records and commits its transaction, timing the
// EndTxn alone; false (the run failed) if either fails.
func (r *produceRun) commit(ctx context.Context, p *producer) bool {
	if err := p.cl.Flush(ctx); err != nil {
		r.fail(fmt.Errorf("perf: flush to %q: %w", r.opts.Topic, err))
		return false
	}
	commit := kgo.TryCommit
	if r.failed.Load() {
		commit = kgo.TryAbort
	}
	start := time.Now()
	if err := p.cl.EndTransaction(ctx, commit); err != nil {
		r.fail(fmt.Errorf("perf: end transaction: %w", err))
		return false
	}
	p.commits.Record(time.Since(start))
	return !r.failed.Load()
}

// pace waits until record number sent of a client producing rate records/s
// is due; false if ctx ended first.
func (r *produceRun) pace(ctx context.Context, sent int64, rate float64) bool {
	due := r.start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
	wait := time.Until(due)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
