// Package txnchain runs an exactly-once pipeline of franz-go
// GroupTransactSessions for tests: records produced to In go through two
// transform stages (In to Mid, Mid to Out, each a consumer group whose
// members read with read_committed and commit their offsets in the
// transaction that writes the stage's output, appending the stage's tag to
// every value), and a read_committed Verifier reads Out and checks that
// every input record came out exactly once, transformed by both stages.
// The end-to-end suite runs it on one broker through rebalances; the fault
// suite on a three-broker cluster while brokers are killed.
//
// Concurrency: each Member moves records on a goroutine of its own, which
// alone touches its session; the test goroutine starts and stops members
// and owns the Verifier. A member reports the error that stops it through
// the Fail callback, the only thing it shares with the test besides its
// atomic counters and its Committing channel.
package txnchain

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The pipeline's topics.
const (
	In  = "chain-in"
	Mid = "chain-mid"
	Out = "chain-out"
)

// Stage is one transform stage of the pipeline: a group reading From and
// writing To, appending Tag to each value.
type Stage struct {
	Group, From, To, Tag string
}

// Stages are the pipeline's two stages, In to Mid to Out.
var Stages = []Stage{
	{"chain-1", In, Mid, "|1"},
	{"chain-2", Mid, Out, "|2"},
}

// Input is input record i, to be produced to In.
func Input(i int) *kgo.Record {
	return &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "r%05d", i)}
}

// Inputs are input records from to to-1.
func Inputs(from, to int) []*kgo.Record {
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, Input(i))
	}
	return recs
}

// Ends are one record for each of Out's parts partitions, to be produced
// (with a manual partitioner) once every transaction has ended: one is
// readable with read_committed only once everything before it in its
// partition is decided, so reading up to all of them catches a duplicate
// committed late.
func Ends(parts int32) []*kgo.Record {
	var recs []*kgo.Record
	for p := range parts {
		recs = append(recs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "end-%d", p)})
	}
	return recs
}

// Options configure a Member.
type Options struct {
	// Client are the session's options besides those StartMember sets:
	// seed brokers, balancers, timeouts.
	Client []kgo.Opt
	// MaxErrors is how many errors the member recovers from by closing
	// its session and opening another with the same transactional ID
	// (whose InitProducerId fences the old one and ends its open
	// transaction); 0 stops it at the first.
	MaxErrors int
	// Fail is called, from the member's goroutine, with the error that
	// stopped it.
	Fail func(error)
}

// Member is one GroupTransactSession of a stage, moving records on a
// goroutine until stopped.
type Member struct {
	// Aborted counts transactions End aborted (a rebalance, a failed
	// offset commit); Errors the errors the member recovered from.
	Aborted, Errors atomic.Int64
	// Committing is sent to, when someone waits on it, just before the
	// member ends a transaction that it means to commit.
	Committing chan struct{}

	id     string
	stage  Stage
	opts   Options
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	lastErr error
}

// StartMember starts a member of stage s with transactional ID id. ctx
// bounds every call but the poll, which Stop cancels (between
// transactions, so none is left open).
func StartMember(ctx context.Context, s Stage, id string, o Options) *Member {
	pollCtx, cancel := context.WithCancel(ctx)
	m := &Member{Committing: make(chan struct{}), id: id, stage: s, opts: o, cancel: cancel, done: make(chan struct{})}
	go m.run(ctx, pollCtx)
	return m
}

// run runs sessions until pollCtx ends or an error more than MaxErrors.
func (m *Member) run(ctx, pollCtx context.Context) {
	defer close(m.done)
	for errs := 0; ; errs++ {
		err := m.session(ctx, pollCtx)
		if err == nil {
			return
		}
		if errs == m.opts.MaxErrors {
			m.opts.Fail(fmt.Errorf("member %s (error %d): %w", m.id, errs+1, err))
			return
		}
		m.Errors.Add(1)
		m.mu.Lock()
		m.lastErr = err
		m.mu.Unlock()
		if pollCtx.Err() != nil {
			return
		}
	}
}

// session moves records with one GroupTransactSession until pollCtx ends
// (nil) or an error.
func (m *Member) session(ctx, pollCtx context.Context) error {
	opts := append([]kgo.Opt{
		kgo.TransactionalID(m.id), kgo.ConsumerGroup(m.stage.Group),
		kgo.ConsumeTopics(m.stage.From), kgo.DefaultProduceTopic(m.stage.To),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, m.opts.Client...)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return fmt.Errorf("group transact session: %w", err)
	}
	defer sess.Close()
	for pollCtx.Err() == nil {
		fs := sess.PollFetches(pollCtx)
		if pollCtx.Err() != nil && fs.Empty() {
			return nil
		}
		var pollErr error
		fs.EachError(func(topic string, p int32, err error) {
			if pollCtx.Err() == nil && pollErr == nil {
				pollErr = fmt.Errorf("poll %s/%d: %w", topic, p, err)
			}
		})
		if pollErr != nil {
			return pollErr
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		var produceErr atomic.Pointer[error]
		for _, r := range recs {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: append(r.Value, m.stage.Tag...)}, func(r *kgo.Record, err error) {
				if err != nil {
					err = fmt.Errorf("produce %s: %w", r.Value, err)
					produceErr.CompareAndSwap(nil, &err)
				}
			})
		}
		// A transaction with a record that failed must abort: flush to
		// learn every record's fate before choosing.
		if err := sess.Client().Flush(ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		end := kgo.TryCommit
		if produceErr.Load() != nil {
			end = kgo.TryAbort
		} else {
			select {
			case m.Committing <- struct{}{}:
			default:
			}
		}
		committed, err := sess.End(ctx, end)
		if err != nil {
			return fmt.Errorf("end transaction: %w", err)
		}
		if p := produceErr.Load(); p != nil {
			return *p
		}
		if !committed {
			m.Aborted.Add(1)
		}
	}
	return nil
}

// Stop cancels the member's poll, waits for its current transaction to
// end and closes the session (leaving the group).
func (m *Member) Stop() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
	})
}

// Done is closed once the member stopped, by Stop or an error.
func (m *Member) Done() <-chan struct{} { return m.done }

// LastErr is the last error the member recovered from.
func (m *Member) LastErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr
}

// Verifier reads Out with read_committed, counting values.
type Verifier struct {
	// Timeout, when set, bounds each WaitFor (and Check).
	Timeout time.Duration

	ctx   context.Context
	cl    *kgo.Client
	got   map[string]int
	total int
}

// NewVerifier reads Out with a client made by newClient; ctx bounds every
// wait, and its cancellation (a member's failure) ends them.
func NewVerifier(ctx context.Context, newClient func(...kgo.Opt) *kgo.Client) *Verifier {
	cl := newClient(kgo.ConsumeTopics(Out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	return &Verifier{ctx: ctx, cl: cl, got: map[string]int{}}
}

// Total is how many records were read.
func (v *Verifier) Total() int { return v.total }

// WaitFor reads until k records in all were read, failing on a member's
// error (which cancels ctx), a duplicate, ctx's deadline or Timeout.
func (v *Verifier) WaitFor(t testing.TB, k int) {
	t.Helper()
	ctx := v.ctx
	if v.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, v.Timeout, fmt.Errorf("no more after %v", v.Timeout))
		defer cancel()
	}
	for v.total < k {
		fs := v.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s: %v", v.total, k, Out, context.Cause(ctx))
		}
		for _, e := range fs.Errors() {
			t.Fatalf("poll %s: %v", Out, e.Err)
		}
		for _, r := range fs.Records() {
			v.got[string(r.Value)]++
			v.total++
			if c := v.got[string(r.Value)]; c > 1 {
				t.Fatalf("%s: %s read %d times (partition %d offset %d)", Out, r.Value, c, r.Partition, r.Offset)
			}
		}
	}
}

// Check reads up to the Ends of Out's parts partitions and checks that
// each of the n inputs came out exactly once through both stages, and
// nothing else did.
func (v *Verifier) Check(t testing.TB, n int, parts int32) {
	t.Helper()
	v.WaitFor(t, n+int(parts))
	for i := range n {
		want := fmt.Sprintf("r%05d|1|2", i)
		if c := v.got[want]; c != 1 {
			t.Errorf("%s holds %s %d times, want once", Out, want, c)
		}
	}
	if len(v.got) != n+int(parts) {
		for k := range v.got {
			if !strings.HasSuffix(k, "|1|2") && !strings.HasPrefix(k, "end-") {
				t.Errorf("%s holds unexpected %q", Out, k)
			}
		}
	}
}
