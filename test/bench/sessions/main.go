// Command sessions measures what incremental fetch sessions (KIP-227)
// save on a consumer of many mostly idle partitions: a franz-go consumer
// of -partitions partitions of a single broker (a child process, with its
// embedded etcd) while a producer writes one small record every
// -interval, spread round-robin over the partitions. It runs once with
// sessions (franz-go's default) and once without
// (kgo.DisableFetchSessions), each on a fresh broker, and reports per
// second of the -duration measured (after the consumer read its first
// record): the request bytes the consumer sent (counted by its dialer)
// and the broker's CPU time (utime+stime of its process), also measured
// for -duration/2 with the producer alone before the consumer starts, so
// that the consumer's share shows apart, with the sessions/no-sessions
// ratios (target: ≤ 0.2).
//
// Concurrency: the sides run one after the other; within one, the
// producer and the consumer each run on a goroutine of their own, and
// main samples the counters.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/perf"
	"github.com/strata-broker/strata/test/harness"
)

type options struct {
	partitions int
	interval   time.Duration
	duration   time.Duration
}

// side is one run's figures, per second measured.
type side struct {
	name         string
	requestBytes float64
	brokerCPU    time.Duration
	baseline     time.Duration // broker CPU per second before the consumer started
	records      int64
}

func main() {
	var o options
	flag.IntVar(&o.partitions, "partitions", 1000, "partitions of the consumed topic")
	flag.DurationVar(&o.interval, "interval", time.Second, "time between two produced records")
	flag.DurationVar(&o.duration, "duration", 25*time.Second, "measured time per side")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "sessions:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "strata-bench-sessions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := harness.BuildStrata(dir)
	if err != nil {
		return err
	}
	fmt.Printf("fetch sessions: franz-go consumer of %d partitions, one record every %v, %v measured per side, one broker\n",
		o.partitions, o.interval, o.duration)
	with, err := measure(o, bin, filepath.Join(dir, "with"), true)
	if err != nil {
		return fmt.Errorf("with sessions: %w", err)
	}
	without, err := measure(o, bin, filepath.Join(dir, "without"), false)
	if err != nil {
		return fmt.Errorf("without sessions: %w", err)
	}
	for _, s := range []side{with, without} {
		fmt.Printf("%-12s request bytes/s %8.0f   broker CPU ms/s %6.2f (without the consumer %6.2f, the consumer's share %6.2f)   records read %d\n",
			s.name, s.requestBytes, ms(s.brokerCPU), ms(s.baseline), ms(s.brokerCPU-s.baseline), s.records)
	}
	fmt.Printf("ratio sessions/no-sessions: request bytes %.3f, broker CPU %.3f, the consumer's share of it %.3f (target ≤ 0.2)\n",
		with.requestBytes/without.requestBytes, float64(with.brokerCPU)/float64(without.brokerCPU),
		float64(with.brokerCPU-with.baseline)/float64(without.brokerCPU-without.baseline))
	return nil
}

// measure runs one side on a fresh broker in dir.
func measure(o options, bin, dir string, sessions bool) (side, error) {
	s := side{name: "sessions"}
	if !sessions {
		s.name = "no-sessions"
	}
	child, addr, err := harness.StartServe(bin, dir, 2*time.Minute)
	if err != nil {
		return s, err
	}
	defer child.Stop(os.Interrupt, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), o.duration+3*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return s, err
	}
	defer adm.Close()
	const topic = "idle"
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, int32(o.partitions), 1, nil, topic); err != nil {
		return s, fmt.Errorf("create topic: %w", err)
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return s, err
	}
	defer prod.Close()
	go func() {
		t := time.NewTicker(o.interval)
		defer t.Stop()
		for ctx.Err() == nil {
			_ = prod.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
	}()
	// The broker's own CPU with the producer alone, for reference.
	time.Sleep(o.duration / 4) // let the topic's creation settle
	cpuB, atB := perf.ProcessCPU(child.Pid()), time.Now()
	time.Sleep(o.duration / 2)
	s.baseline = time.Duration(float64(perf.ProcessCPU(child.Pid())-cpuB) / time.Since(atB).Seconds())

	var sent atomic.Int64
	d := &net.Dialer{Timeout: 10 * time.Second}
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, host)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: c, sent: &sent}, nil
		})}
	if !sessions {
		opts = append(opts, kgo.DisableFetchSessions())
	}
	cons, err := kgo.NewClient(opts...)
	if err != nil {
		return s, err
	}
	defer cons.Close()
	var read atomic.Int64
	go func() {
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			fs.EachRecord(func(*kgo.Record) { read.Add(1) })
		}
	}()
	for read.Load() == 0 {
		if ctx.Err() != nil {
			return s, errors.New("the consumer read nothing")
		}
		time.Sleep(50 * time.Millisecond)
	}
	bytes0, cpu0, read0, at0 := sent.Load(), perf.ProcessCPU(child.Pid()), read.Load(), time.Now()
	time.Sleep(o.duration)
	secs := time.Since(at0).Seconds()
	s.requestBytes = float64(sent.Load()-bytes0) / secs
	s.brokerCPU = time.Duration(float64(perf.ProcessCPU(child.Pid())-cpu0) / secs)
	s.records = read.Load() - read0
	return s, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// countingConn counts the bytes written to a connection.
type countingConn struct {
	net.Conn
	sent *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.sent.Add(int64(n))
	return n, err
}
