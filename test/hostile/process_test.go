package hostile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestAcceptStormUnderFileLimit runs the broker under an open-file limit
// of 1024 and opens 1,100 idle connections: accepts fail with EMFILE and
// the broker backs off and retries instead of dying; once they close, it
// serves again, refuses a topic over the partition budget its limit
// leaves (POLICY_VIOLATION), and its RSS stays bounded.
func TestAcceptStormUnderFileLimit(t *testing.T) {
	g := startTarget(t, harness.UnderFileLimit(t, 1024), map[string]string{
		"connections.max.idle.ms": strconv.FormatInt(idleTimeout.Milliseconds(), 10),
	})
	g.check(t)
	before := g.p.RSS()
	n := scaled(1100, 3000)
	conns := idleConns(t, g.p.Addr(), n)
	waitLog(t, g.p, "accept failed; retrying", closeBound)
	during := g.p.RSS()
	for _, c := range conns {
		c.Close()
	}
	g.check(t)
	adm := harness.NewAdmin(t, g.p.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	r, err := adm.CreateTopic(ctx, 300, 1, nil, "hostile-over-budget")
	if err == nil {
		err = r.Err
	}
	if !errors.Is(err, kerr.PolicyViolation) || !strings.Contains(r.ErrMessage, "its limit is") {
		t.Errorf("create 300 partitions under 1024 files: %v %q, want POLICY_VIOLATION naming the limit", err, r.ErrMessage)
	}
	after := g.p.RSS()
	t.Logf("broker RSS %s before, %s with %d connections pending, %s after", mib(before), mib(during), n, mib(after))
	if after-before > rssGrowthBound || during-before > rssGrowthBound {
		t.Fatalf("broker RSS grew from %s to %s (%s during), more than %s", mib(before), mib(after), mib(during), mib(rssGrowthBound))
	}
}

// waitLog waits until the broker's log contains s, failing the test after
// within.
func waitLog(t *testing.T, p *harness.Process, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(p.Log(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not log %q within %v", s, within)
		}
		<-tick.C
	}
}

// TestKill9Loop kills the broker with SIGKILL while a producer streams
// records with acks=all, damages the tail of the partition's active
// segment (a torn batch, random garbage, a batch with a bad CRC, in
// turn), and restarts it: every acknowledged record is still there, in
// order, and the canary is intact.
func TestKill9Loop(t *testing.T) {
	rounds := scaled(3, 20)
	g := startTarget(t, nil, nil)
	const topic = "hostile-crash"
	harness.CreateTopic(t, harness.NewAdmin(t, g.p.Addr()), topic, 1, nil)
	var acked []string // values acknowledged, in offset order
	rng := rand.New(rand.NewPCG(13, 17))
	for round := range rounds {
		acked = append(acked, produceUntilKilled(t, g, topic, round)...)
		tearTail(t, filepath.Join(g.p.Dir(), topic+"-0"), round, rng)
		g.p.Restart()
		g.check(t)
		got := harness.ReadAll(t, g.p.Addr(), topic)[0]
		if len(got) < len(acked) {
			t.Fatalf("round %d: %d records after the restart, %d were acknowledged", round, len(got), len(acked))
		}
		// Records produced but not acknowledged before the kill may be
		// there too; the acknowledged ones come first, in order.
		for i, v := range acked {
			if string(got[i].Value) != v {
				t.Fatalf("round %d: offset %d holds %q, acknowledged %q", round, i, got[i].Value, v)
			}
		}
		acked = acked[:0]
		for _, r := range got {
			if string(r.Value) == "never acknowledged" {
				t.Fatalf("round %d: the damaged tail's batch was kept at offset %d", round, r.Offset)
			}
			acked = append(acked, string(r.Value))
		}
		t.Logf("round %d: %d records intact", round, len(acked))
	}
}

// produceUntilKilled streams records with acks=all and kills the broker
// once 200 of them are acknowledged, while more are in flight; it returns
// the acknowledged values in offset order.
func produceUntilKilled(t *testing.T, g *target, topic string, round int) []string {
	t.Helper()
	cl := harness.NewClient(t, g.p.Addr(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(64)) // Produce blocks: the kill finds at most 64 in flight
	var mu sync.Mutex
	byOffset := map[int64]string{}
	enough := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 5000 { // bounded: the kill comes after 200 acks
		if ctx.Err() != nil {
			break
		}
		select {
		case <-enough:
		default:
			wg.Add(1)
			v := fmt.Sprintf("r%d-%05d", round, i)
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					return
				}
				mu.Lock()
				byOffset[r.Offset] = v
				if len(byOffset) >= 200 {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			})
			continue
		}
		break
	}
	select {
	case <-enough:
	case <-ctx.Done():
		t.Fatalf("round %d: 200 records not acknowledged within %v", round, harness.OpTimeout)
	}
	g.p.Kill9()
	cancel()
	// An idempotent producer never fails a record whose request may have
	// been written, not even when its context ends; closing the client
	// fails them all, so the wait ends before the restart.
	cl.Close()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	offsets := slices.Sorted(func(yield func(int64) bool) {
		for o := range byOffset {
			if !yield(o) {
				return
			}
		}
	})
	var out []string
	for _, o := range offsets {
		out = append(out, byOffset[o])
	}
	return out
}

// tearTail appends to the newest segment in dir what a crash can leave
// behind: half of a batch (round%3 == 0), random bytes (1), or a whole
// batch with a bad CRC (2).
func tearTail(t *testing.T, dir string, round int, rng *rand.Rand) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no segment in %s: %v", dir, err)
	}
	slices.Sort(logs)
	batch := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: time.Now().UnixMilli(),
		Records: []harness.RawRecord{{Value: []byte("never acknowledged")}}})
	var tail []byte
	switch round % 3 {
	case 0:
		tail = batch[:len(batch)/2]
	case 1:
		tail = make([]byte, 1+rng.IntN(512))
		for i := range tail {
			tail[i] = byte(rng.Uint32())
		}
	case 2:
		tail = batch
		tail[len(tail)-2] ^= 0x55
	}
	f, err := os.OpenFile(logs[len(logs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("open the active segment: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(tail); err != nil {
		t.Fatalf("damage the active segment: %v", err)
	}
}
