package perf

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Consume reads the topic from the log start of every partition, without a
// consumer group, until Records records were read (by default: as many as
// the topic held when the run started) or Duration passed. Running out of
// time is not an error: the Result then holds fewer records than asked.
func Consume(ctx context.Context, opts ConsumeOptions) (Result, error) {
	res := Result{Op: opConsume}
	o, err := opts.withDefaults()
	if err != nil {
		return res, err
	}
	target := o.Records
	if target == 0 {
		n, err := countRecords(ctx, dialOpts(o.Brokers, o.TLS), o.Topic)
		if err != nil {
			return res, err
		}
		if n == 0 {
			return res, fmt.Errorf("%w: %q", ErrEmptyTopic, o.Topic)
		}
		target = n
	}
	kopts := append(dialOpts(o.Brokers, o.TLS),
		kgo.ConsumeTopics(o.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if o.ReadCommitted {
		kopts = append(kopts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if o.FetchMaxBytes > 0 {
		kopts = append(kopts, kgo.FetchMaxBytes(o.FetchMaxBytes))
	}
	if o.FetchMaxPartBytes > 0 {
		kopts = append(kopts, kgo.FetchMaxPartitionBytes(o.FetchMaxPartBytes))
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return res, fmt.Errorf("perf: consumer client: %w", err)
	}
	defer cl.Close()

	pctx := ctx
	if o.Duration > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	start := time.Now()
	for res.Records < target && pctx.Err() == nil {
		fetches := cl.PollFetches(pctx)
		fetches.EachRecord(func(r *kgo.Record) {
			res.Records++
			res.Bytes += int64(len(r.Key) + len(r.Value))
		})
		if err := fetchError(fetches); err != nil {
			res.Elapsed = time.Since(start)
			return res, fmt.Errorf("perf: consume %q: %w", o.Topic, err)
		}
	}
	res.Elapsed = time.Since(start)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("perf: consume %q: %w", o.Topic, err)
	}
	return res, nil
}

// fetchError is the first error in fetches other than the poll context
// ending, which the caller checks itself.
func fetchError(fetches kgo.Fetches) error {
	var first error
	fetches.EachError(func(topic string, partition int32, err error) {
		if first != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		first = fmt.Errorf("partition %d: %w", partition, err)
	})
	return first
}
