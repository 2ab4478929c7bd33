package perf

import (
	"fmt"
	"time"
)

// bytesPerMB is the MB of the MB/s figures, 2^20 bytes as in Kafka's tools.
const bytesPerMB = 1 << 20

// Result is what one run measured. Latency fields are set by Produce only
// (per-record time from the Produce call to its acknowledgement).
type Result struct {
	Op         string        // "produce" or "consume"
	Records    int64         // records acknowledged (produce) or read (consume)
	Bytes      int64         // key+value bytes of those records
	Elapsed    time.Duration // wall time from the first record issued to the last completed
	LatencyP50 time.Duration
	LatencyP99 time.Duration
	LatencyAvg time.Duration
	LatencyMax time.Duration
	// Transactions a transactional Produce committed, and the p50 and p99
	// of their EndTxn (commit) calls, after the flush that precedes each.
	Txns      int64
	EndTxnP50 time.Duration
	EndTxnP99 time.Duration
}

// MBPerSec is the throughput in MB (2^20 bytes) per second.
func (r Result) MBPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / bytesPerMB / r.Elapsed.Seconds()
}

// RecordsPerSec is the throughput in records per second.
func (r Result) RecordsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Records) / r.Elapsed.Seconds()
}

// String is the one-line summary the CLI prints, after Kafka's perf tools.
func (r Result) String() string {
	s := fmt.Sprintf("%s: %d records, %.2f MB in %.2fs: %.1f records/s (%.2f MB/s)",
		r.Op, r.Records, float64(r.Bytes)/bytesPerMB, r.Elapsed.Seconds(), r.RecordsPerSec(), r.MBPerSec())
	if r.Op == opProduce {
		s += fmt.Sprintf(", latency avg %s, p50 %s, p99 %s, max %s",
			fmtMs(r.LatencyAvg), fmtMs(r.LatencyP50), fmtMs(r.LatencyP99), fmtMs(r.LatencyMax))
	}
	if r.Txns > 0 {
		s += fmt.Sprintf(", %d transactions, commit p50 %s, p99 %s", r.Txns, fmtMs(r.EndTxnP50), fmtMs(r.EndTxnP99))
	}
	return s
}

// fmtMs prints a duration in milliseconds with two decimals.
func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

const (
	opProduce = "produce"
	opConsume = "consume"
)
