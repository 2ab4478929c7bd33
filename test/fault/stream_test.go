package fault

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// stream is a bounded stream of unique records written by several
// idempotent acks=all producers. The nemesis releases tickets in chunks so
// the writes spread over the faults; ticket i goes to partition
// i % partitions, and the producer that takes it names the record
// "<producer>-<its own sequence>", so records of one producer to one
// partition must appear in sequence order.
type stream struct {
	t          *testing.T
	partitions int32
	tickets    chan int
	wg         sync.WaitGroup

	mu     sync.Mutex
	acked  map[string]bool // record key -> acknowledged
	failed int             // records whose produce failed (they may or may not be in the log)
	lastEr error
}

func newStream(t *testing.T, seeds []string, topic string, producers int, partitions int32, total int) *stream {
	s := &stream{t: t, partitions: partitions, tickets: make(chan int, total), acked: map[string]bool{}}
	for j := range producers {
		cl := harness.NewClient(t, seeds[0],
			kgo.SeedBrokers(seeds...),
			kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.MaxBufferedRecords(1000),
			kgo.ProducerLinger(2*time.Millisecond),
			kgo.RecordDeliveryTimeout(2*time.Minute),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
			// A broker killed or shutting down (lease lost) while a
			// connection opens reads as EOF; it is no TLS mismatch here.
			kgo.AlwaysRetryEOF(),
		)
		s.wg.Add(1)
		go s.produce(cl, j)
	}
	return s
}

// release hands n more tickets to the producers.
func (s *stream) release(from, n int) {
	for i := from; i < from+n; i++ {
		s.tickets <- i
	}
}

// produce writes one record per ticket until the tickets run out, then
// waits for every outstanding acknowledgement.
func (s *stream) produce(cl *kgo.Client, producer int) {
	defer s.wg.Done()
	ctx := context.Background()
	seq := 0
	for i := range s.tickets {
		key := fmt.Sprintf("%d-%d", producer, seq)
		seq++
		r := &kgo.Record{Key: []byte(key), Value: fmt.Appendf(nil, "ticket %d %s", i, strings.Repeat("x", 64)), Partition: int32(i) % s.partitions}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err != nil {
				s.failed++
				s.lastEr = err
				return
			}
			s.acked[string(r.Key)] = true
		})
	}
	fctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	_ = cl.Flush(fctx)
}

// finish closes the ticket supply and waits for every producer.
func (s *stream) finish() {
	close(s.tickets)
	s.wg.Wait()
}

// waitAcked waits until n records were acknowledged, failing the test
// if a produce fails or settle passes first.
func (s *stream) waitAcked(n int) {
	s.t.Helper()
	for deadline := time.Now().Add(settle); ; time.Sleep(20 * time.Millisecond) {
		acked, failed := s.counts()
		switch {
		case failed > 0:
			s.t.Fatalf("%d produces failed (last: %v), %d acknowledged", failed, s.lastErr(), acked)
		case acked >= n:
			return
		case time.Now().After(deadline):
			s.t.Fatalf("%d of %d records acknowledged after %v", acked, n, settle)
		}
	}
}

// lastErr is the last produce error.
func (s *stream) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastEr
}

// counts are the records acknowledged and failed so far.
func (s *stream) counts() (acked, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked), s.failed
}

// parseKey splits "<producer>-<seq>".
func parseKey(k []byte) (producer, seq int, err error) {
	a, b, ok := strings.Cut(string(k), "-")
	if !ok {
		return 0, 0, fmt.Errorf("bad key %q", k)
	}
	if producer, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("bad key %q: %w", k, err)
	}
	if seq, err = strconv.Atoi(b); err != nil {
		return 0, 0, fmt.Errorf("bad key %q: %w", k, err)
	}
	return producer, seq, nil
}

// verdict is what the checker found.
type verdict struct {
	read, acked, lost, duplicated, unackedPresent, gaps, disorder int
	problems                                                      []string
}

func (v *verdict) problem(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

// check compares what the log holds (records by partition, in offset
// order) with what the producers were told was acknowledged.
func (s *stream) check(log map[int32][]*kgo.Record) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := verdict{acked: len(s.acked)}
	seen := map[string]int64{}
	for p, recs := range log {
		last := map[int]int{} // producer -> last seq seen in p
		for i, r := range recs {
			v.read++
			if i > 0 && r.Offset != recs[i-1].Offset+1 {
				v.gaps++
				v.problem("partition %d: offset %d follows %d", p, r.Offset, recs[i-1].Offset)
			}
			if i == 0 && r.Offset != 0 {
				v.gaps++
				v.problem("partition %d: first offset %d, want 0", p, r.Offset)
			}
			k := string(r.Key)
			if prev, dup := seen[k]; dup {
				v.duplicated++
				v.problem("record %s at partition %d offset %d already at offset %d", k, p, r.Offset, prev)
				continue
			}
			seen[k] = r.Offset
			prod, seq, err := parseKey(r.Key)
			if err != nil {
				v.problem("partition %d offset %d: %v", p, r.Offset, err)
				continue
			}
			if l, ok := last[prod]; ok && seq <= l {
				v.disorder++
				v.problem("partition %d offset %d: producer %d seq %d after seq %d", p, r.Offset, prod, seq, l)
			}
			last[prod] = seq
			if !s.acked[k] {
				v.unackedPresent++
			}
		}
	}
	for k := range s.acked {
		if _, ok := seen[k]; !ok {
			v.lost++
			if v.lost <= 10 {
				v.problem("acknowledged record %s is missing", k)
			}
		}
	}
	return v
}
