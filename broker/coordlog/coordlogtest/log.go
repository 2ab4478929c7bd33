// Package coordlogtest gives the coordinators' tests (broker/group,
// broker/txn) a real partition log behind coordlog.Log, whose appends and
// reads can be made to fail, so that a failed internal-topic write or
// load can be tested without a broker.
//
// Concurrency: a Log is safe for concurrent use; its own mutex guards only
// the failure switch, the local.Log guards itself.
package coordlogtest

import (
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// ErrInjected is what Append and Read return while SetFail(true) holds.
var ErrInjected = errors.New("injected append failure")

// Log is a local.Log (L) behind the coordlog.Log interface; its high
// watermark is its log end, as for a partition without followers.
type Log struct {
	L    *local.Log
	mu   sync.Mutex
	fail bool
}

// Open opens a log in dir, closed when the test ends.
func Open(t testing.TB, dir string) *Log {
	t.Helper()
	l, err := local.Open(dir, local.Config{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return &Log{L: l}
}

// Append appends as leader, or fails with ErrInjected.
func (tl *Log) Append(batches []record.Batch, now int64) (local.AppendResult, error) {
	tl.mu.Lock()
	fail := tl.fail
	tl.mu.Unlock()
	if fail {
		return local.AppendResult{}, ErrInjected
	}
	return tl.L.AppendAsLeader(batches, local.AppendOptions{Now: now})
}

// Read reads up to the log end, or fails with ErrInjected.
func (tl *Log) Read(offset int64, maxBytes int) (segment.Slice, error) {
	tl.mu.Lock()
	fail := tl.fail
	tl.mu.Unlock()
	if fail {
		return segment.Slice{}, ErrInjected
	}
	return tl.L.Read(offset, maxBytes, tl.L.LogEndOffset())
}

// LogStartOffset is the log's start.
func (tl *Log) LogStartOffset() int64 { return tl.L.LogStartOffset() }

// HighWatermark is the log end.
func (tl *Log) HighWatermark() int64 { return tl.L.LogEndOffset() }

// Log is the local log, whose producer state numbers transactional
// appends (coordlog.Partition.AppendTxn).
func (tl *Log) Log() *local.Log { return tl.L }

// SetFail makes appends and reads fail (true) or succeed again (false).
func (tl *Log) SetFail(v bool) {
	tl.mu.Lock()
	tl.fail = v
	tl.mu.Unlock()
}
