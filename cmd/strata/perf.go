package main

import (
	"context"
	"io"

	"github.com/strata-broker/strata/perf"
)

// runPerf is `strata perf produce|consume [flags]`, the Kafka-style load
// generator of package perf (like kafka-producer-perf-test and
// kafka-consumer-perf-test). Cancelling ctx (Ctrl-C) stops the run; what
// was measured so far is still printed.
func runPerf(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return perf.Command(ctx, args, stdout, stderr)
}
