package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

const (
	txnID = "chaos-txn"
	// txnRecords is how many records one transaction writes, spread over
	// every partition.
	txnRecords = 6
	// txnGrowth is how many more transactions must commit between faults.
	txnGrowth = 20
	// maxTxns bounds the workload.
	maxTxns = 20000
)

// TestNemesisTxn: a transactional producer commits two of every three
// transactions and aborts the third, on the three-broker cluster, while
// the nemesis kill -9s the broker of the transaction coordinator (the
// leader of the transactional id's __transaction_state partition) and
// then a partition leader, each as a commit begins, STRATA_FAULT_ROUNDS
// times. Afterwards a
// read_committed consumer must read every record of every committed
// transaction exactly once, none of an aborted one, and of a transaction
// whose commit ended in an error (its outcome unknown to the producer)
// all records once or none.
func TestNemesisTxn(t *testing.T) {
	rounds := envInt(t, "STRATA_FAULT_ROUNDS", 1)
	seed, rng := nemesisRand(t)
	t.Logf("nemesis: seed %d (STRATA_FAULT_SEED=%d to replay), %d round(s)", seed, seed, rounds)
	c := startCluster(t, 3, txnClusterConfig())
	c.createTopic(topic)

	w := startTxnWorkload(t, c.seeds())
	defer w.stop()
	w.waitCommitted(txnGrowth)
	for round := range rounds {
		for _, f := range []struct {
			name   string
			inject func(*cluster, *txnWorkload, *rand.Rand) string
		}{{"kill -9 coordinator", killTxnCoordinator}, {"kill -9 leader", killTxnLeader}} {
			before := w.counts()
			start := time.Now()
			detail := f.inject(c, w, rng)
			c.waitFullISR(topic, partitions, settle)
			c.waitFullISR(txnStateTopic, 3, settle)
			w.waitCommitted(before.committed + txnGrowth)
			t.Logf("nemesis: round %d/%d %s: %s; %v in all; transactions so far: %+v", round+1, rounds, f.name, detail,
				time.Since(start).Round(time.Millisecond), w.counts())
		}
	}
	w.stop()
	got := readCommittedToEnd(t, c.seeds())
	v, unknownRead := w.check(got)
	t.Logf("nemesis: transactions %+v (%d of those whose commit failed were committed all the same); read_committed read %d records; %d problems",
		w.counts(), unknownRead, v.read, len(v.problems))
	if err := w.err(); err != nil {
		t.Logf("nemesis: last transaction error: %v", err)
	}
	for i, p := range v.problems {
		if i == 20 {
			t.Errorf("… and %d more", len(v.problems)-20)
			break
		}
		t.Error(p)
	}
	c.waitIdentical(topic, partitions, settle)
}

const txnStateTopic = "__transaction_state"

// txnClusterConfig is the broker settings of the transactional nemesis
// tests: RF 3 with min.insync.replicas 2 everywhere, __transaction_state
// included, and short leases.
func txnClusterConfig() map[string]string {
	return map[string]string{
		"broker.session.timeout.ms":                strconv.Itoa(sessionMs),
		"replica.lag.time.max.ms":                  "2000",
		"min.insync.replicas":                      "2",
		"default.replication.factor":               "3",
		"auto.create.topics.enable":                "false",
		"transaction.state.log.num.partitions":     "3",
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "2",
	}
}

// txnCoordinator asks the cluster which broker coordinates txnID.
func txnCoordinator(c *cluster) int32 { return coordinator(c, coordinatorTxn, txnID) }

// FindCoordinator key types.
const (
	coordinatorGroup int8 = 0
	coordinatorTxn   int8 = 1
)

// coordinator asks the cluster which broker coordinates key, a group or a
// transactional id by typ.
func coordinator(c *cluster, typ int8, key string) int32 {
	c.t.Helper()
	var id int32
	c.waitFor(fmt.Sprintf("the coordinator of %s", key), settle, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = typ
		req.CoordinatorKey = key
		req.CoordinatorKeys = []string{key}
		resp, err := req.RequestWith(ctx, c.client)
		if err != nil {
			return false, err.Error()
		}
		code, node := resp.ErrorCode, resp.NodeID
		if len(resp.Coordinators) > 0 {
			code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		if err := kerr.ErrorForCode(code); err != nil {
			return false, err.Error()
		}
		id = node
		return true, ""
	})
	return id
}

// killTxnCoordinator kill -9s the broker coordinating txnID as the
// workload's next commit begins, waits until the controller moved its
// __transaction_state leaderships, and restarts it.
func killTxnCoordinator(c *cluster, w *txnWorkload, _ *rand.Rand) string {
	id := txnCoordinator(c)
	moved := killAtCommit(c, w, id, txnStateTopic)
	return fmt.Sprintf("broker %d (transaction coordinator) killed as a commit began; coordination moved to broker %d after %v",
		id, txnCoordinator(c), moved.Round(time.Millisecond))
}

// killTxnLeader kill -9s the leader of a random partition of topic as the
// workload's next commit begins (its marker is then due there), waits
// until the controller elected another, and restarts it.
func killTxnLeader(c *cluster, w *txnWorkload, rng *rand.Rand) string {
	p := int32(rng.IntN(partitions))
	id := leaderOf(c, topic, p)
	moved := killAtCommit(c, w, id, topic)
	return fmt.Sprintf("broker %d (leader of partition %d) killed as a commit began; leadership moved after %v", id, p, moved.Round(time.Millisecond))
}

// killAtCommit kill -9s broker id once the workload is about to commit,
// waits until the controller moved its leaderships of topic, and
// restarts it.
func killAtCommit(c *cluster, w *txnWorkload, id int32, topic string) time.Duration {
	c.t.Helper()
	select {
	case <-w.committing:
	case <-w.done:
		c.t.Fatalf("the transactional workload ended (last error: %v)", w.err())
	case <-time.After(settle):
		c.t.Fatalf("no commit began in %v (last error: %v)", settle, w.err())
	}
	c.node(id).proc.Kill9()
	moved := c.waitGone(id, topic, settle)
	c.node(id).proc.Restart()
	return moved
}

// txnOutcome is what the producer knows of one transaction.
type txnOutcome int

const (
	txnAborted   txnOutcome = iota // never asked to commit: none may be read
	txnCommitted                   // commit acknowledged: all must be read once
	txnUnknown                     // commit failed: all once or none
)

// txnCounts are the transactions the workload ended, by outcome.
type txnCounts struct{ committed, aborted, unknown int }

// txnWorkload runs transactions on topic in a goroutine until stopped,
// recording each one's outcome under mu.
type txnWorkload struct {
	t     *testing.T
	seeds []string
	quit  chan struct{}
	done  chan struct{}
	// committing is sent to, when the nemesis waits on it, just before
	// a commit is asked for.
	committing chan struct{}
	stopOnce   sync.Once

	mu      sync.Mutex
	txns    []txnOutcome // by transaction number
	n       txnCounts
	lastErr error
}

func startTxnWorkload(t *testing.T, seeds []string) *txnWorkload {
	w := &txnWorkload{t: t, seeds: seeds, quit: make(chan struct{}), done: make(chan struct{}), committing: make(chan struct{})}
	go w.run()
	return w
}

// txnClientOpts make a transactional producer for txnID, retrying for as
// long as a fault takes to heal.
func txnClientOpts(seeds []string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(txnID),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(settle),
		kgo.RetryTimeout(settle),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.AlwaysRetryEOF(),
	}
}

// run begins, produces and ends transactions until quit or maxTxns; after
// an error it aborts if it can and goes on with a new client (whose
// InitProducerId aborts whatever the old one left open).
func (w *txnWorkload) run() {
	defer close(w.done)
	cl, err := kgo.NewClient(txnClientOpts(w.seeds)...)
	if err != nil {
		w.fail(err)
		return
	}
	defer func() { cl.Close() }()
	ctx := context.Background()
	for i := 0; i < maxTxns; i++ {
		select {
		case <-w.quit:
			return
		default:
		}
		commit := i%3 != 2
		outcome, err := runTxn(ctx, cl, i, commit, w.committing)
		w.mu.Lock()
		w.txns = append(w.txns, outcome)
		switch outcome {
		case txnCommitted:
			w.n.committed++
		case txnAborted:
			w.n.aborted++
		case txnUnknown:
			w.n.unknown++
		}
		if err != nil {
			w.lastErr = err
		}
		w.mu.Unlock()
		if err != nil {
			cl.Close()
			if cl, err = kgo.NewClient(txnClientOpts(w.seeds)...); err != nil {
				w.fail(err)
				return
			}
		}
	}
}

// fail records err as the reason the workload ended.
func (w *txnWorkload) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastErr = fmt.Errorf("transactional client: %w", err)
}

// runTxn runs transaction i: txnRecords records, committed or aborted.
// Before committing it tells committing, if anyone waits there.
func runTxn(ctx context.Context, cl *kgo.Client, i int, commit bool, committing chan<- struct{}) (txnOutcome, error) {
	if err := cl.BeginTransaction(); err != nil {
		return txnAborted, fmt.Errorf("begin %d: %w", i, err)
	}
	var recs []*kgo.Record
	for j := range txnRecords {
		recs = append(recs, &kgo.Record{Partition: int32(j % partitions), Key: fmt.Appendf(nil, "t%d-%d", i, j)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		abortErr := cl.EndTransaction(ctx, kgo.TryAbort)
		return txnAborted, fmt.Errorf("produce in %d: %w (abort: %v)", i, err, abortErr)
	}
	if !commit {
		if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
			return txnAborted, fmt.Errorf("abort %d: %w", i, err)
		}
		return txnAborted, nil
	}
	select {
	case committing <- struct{}{}:
	default:
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return txnUnknown, fmt.Errorf("commit %d: %w", i, err)
	}
	return txnCommitted, nil
}

// stop ends the workload after its current transaction.
func (w *txnWorkload) stop() {
	w.stopOnce.Do(func() {
		close(w.quit)
		<-w.done
	})
}

// err is the last error the workload met.
func (w *txnWorkload) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

func (w *txnWorkload) counts() txnCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// waitCommitted waits until n transactions committed, failing the test if
// the workload ends or settle passes first.
func (w *txnWorkload) waitCommitted(n int) {
	w.t.Helper()
	for deadline := time.Now().Add(settle); ; time.Sleep(20 * time.Millisecond) {
		w.mu.Lock()
		got, last := w.n, w.lastErr
		w.mu.Unlock()
		select {
		case <-w.done:
			w.t.Fatalf("the transactional workload ended with %+v, waiting for %d commits (last error: %v)", got, n, last)
		default:
		}
		if got.committed >= n {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%+v transactions after %v, waiting for %d commits (last error: %v)", got, settle, n, last)
		}
	}
}

// readCommittedToEnd commits a last transaction writing "end" to every
// partition, with txnID (so that nothing of the workload is left open),
// and reads topic with read_committed up to it: the keys read, in order,
// by partition.
func readCommittedToEnd(t *testing.T, seeds []string) map[int32][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	cl := harness.NewClient(t, seeds[0], txnClientOpts(seeds)...)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin the last transaction: %v", err)
	}
	for p := range int32(partitions) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Key: []byte("end")}).FirstErr(); err != nil {
			t.Fatalf("produce end to partition %d: %v", p, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit the last transaction: %v", err)
	}
	rd := harness.NewClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32][]string{}
	ended := 0
	for ended < partitions {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed: %d of %d partitions read up to end: %v", ended, partitions, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("read_committed %s/%d: %v", topic, p, err)
			}
		})
		for _, r := range fs.Records() {
			if string(r.Key) == "end" {
				ended++
				continue
			}
			got[r.Partition] = append(got[r.Partition], string(r.Key))
		}
	}
	return got
}

// check compares what read_committed read with the outcomes; it also
// counts the transactions whose commit failed that were read.
func (w *txnWorkload) check(got map[int32][]string) (v verdict, unknownRead int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[int]int{} // transaction -> records read
	dup := map[string]bool{}
	for p, keys := range got {
		for _, k := range keys {
			v.read++
			if dup[k] {
				v.problem("partition %d: %s read twice", p, k)
				continue
			}
			dup[k] = true
			var i, j int
			if _, err := fmt.Sscanf(k, "t%d-%d", &i, &j); err != nil || i >= len(w.txns) {
				v.problem("partition %d: unexpected record %q", p, k)
				continue
			}
			seen[i]++
			if w.txns[i] == txnAborted {
				v.problem("partition %d: %s of aborted transaction %d read", p, k, i)
			}
		}
	}
	for i, o := range w.txns {
		switch {
		case o == txnCommitted && seen[i] != txnRecords:
			v.problem("committed transaction %d: %d of its %d records read", i, seen[i], txnRecords)
		case o == txnUnknown && seen[i] != 0 && seen[i] != txnRecords:
			v.problem("transaction %d (commit failed): %d of its %d records read, want all or none", i, seen[i], txnRecords)
		case o == txnUnknown && seen[i] == txnRecords:
			unknownRead++
		}
	}
	return v, unknownRead
}
