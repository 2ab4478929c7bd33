package perf

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Usage is the synopsis of the perf command.
const Usage = `usage: strata perf produce|consume [flags]
  strata perf produce -brokers host:port -topic t -records 100000 -record-size 1024 -partitions 4
  strata perf consume -brokers host:port -topic t
Run "strata perf produce -h" or "strata perf consume -h" for the flags.`

// Command runs `strata perf <produce|consume> [flags]`; args start after
// "perf". The one-line result goes to stdout, usage and flag errors to
// stderr. -h prints the flags and returns nil.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, Usage)
		return fmt.Errorf("%w: missing produce or consume", ErrOptions)
	}
	var (
		run func() (Result, error)
		fs  = flag.NewFlagSet("strata perf "+args[0], flag.ContinueOnError)
	)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "localhost:9092", "comma-separated seed brokers (host:port)")
	switch args[0] {
	case "produce":
		var o ProduceOptions
		fs.StringVar(&o.Topic, "topic", DefaultTopic, "topic to write (created if missing)")
		fs.IntVar(&o.RecordSize, "record-size", DefaultRecordSize, "value bytes per record")
		fs.Int64Var(&o.Records, "records", 0, fmt.Sprintf("records to write (default %d when -duration is not set)", DefaultRecords))
		fs.DurationVar(&o.Duration, "duration", 0, "stop after this long (0 = bounded by -records only)")
		fs.IntVar(&o.Partitions, "partitions", DefaultPartitions, "partitions of the topic if it is created")
		fs.IntVar(&o.ReplicationFactor, "replication-factor", 0, "replication factor of a created topic (0 = broker default)")
		fs.DurationVar(&o.Linger, "linger", DefaultLinger, "producer linger (negative = none)")
		fs.IntVar(&o.Concurrency, "concurrency", 1, "independent producer clients")
		fs.Float64Var(&o.Throughput, "throughput", 0, "target records/s over all clients (0 = unthrottled)")
		fs.IntVar(&o.BatchMaxBytes, "batch-max-bytes", 0, "max bytes per record batch (0 = client default)")
		fs.BoolVar(&o.DisableIdempotence, "no-idempotence", false, "produce without idempotence")
		fs.StringVar(&o.Compression, "compression", "none", "producer compression: none, gzip, snappy, lz4 or zstd")
		fs.DurationVar(&o.DeliveryTimeout, "delivery-timeout", DefaultDeliveryTimeout, "fail a record not acknowledged within this")
		run = func() (Result, error) {
			o.Brokers = splitBrokers(*brokers)
			return Produce(ctx, o)
		}
	case "consume":
		var o ConsumeOptions
		fs.StringVar(&o.Topic, "topic", DefaultTopic, "topic to read from its start")
		fs.Int64Var(&o.Records, "records", 0, "records to read (0 = all present at start)")
		fs.DurationVar(&o.Duration, "duration", 0, "give up after this long (0 = no time bound)")
		var maxBytes, maxPart int
		fs.IntVar(&maxBytes, "fetch-max-bytes", 0, "max bytes per fetch response (0 = client default)")
		fs.IntVar(&maxPart, "fetch-max-partition-bytes", 0, "max bytes per partition in a fetch (0 = client default)")
		run = func() (Result, error) {
			o.Brokers = splitBrokers(*brokers)
			o.FetchMaxBytes = int32(min(max(maxBytes, -1), 1<<30))
			o.FetchMaxPartBytes = int32(min(max(maxPart, -1), 1<<30))
			return Consume(ctx, o)
		}
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stderr, Usage)
		return nil
	default:
		fmt.Fprintln(stderr, Usage)
		return fmt.Errorf("%w: unknown perf command %q", ErrOptions, args[0])
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %v", ErrOptions, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", ErrOptions, fs.Args())
	}
	res, err := run()
	if res.Records > 0 || err == nil {
		fmt.Fprintln(stdout, res)
	}
	return err
}

// splitBrokers turns "a:1, b:2" into ["a:1" "b:2"], dropping empty entries.
func splitBrokers(s string) []string {
	var out []string
	for b := range strings.SplitSeq(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}
