// Command acl measures what the ACL authorizer costs the produce path: the
// same produce load (franz-go, -mb MiB per round of -record-byte records,
// acks=all, uncompressed, -partitions partitions) against two single brokers (child
// processes with their embedded etcd) started together, one without an
// authorizer and one with authorizer.class.name set and 10,000 ACLs
// loaded (5,000 LITERAL and 5,000 PREFIXED topic ACLs, among which the
// producer's own and prefixed ones that apply to its topic's name but
// name other principals, so every check walks literal and prefix
// look-ups). After a warm-up round each, every round runs both brokers in
// turns (ABBA order); each reports the broker's CPU time (utime+stime
// from /proc/<pid>/stat) per MiB produced, and the run reports the median
// of the rounds' ratios (target ≤ 1.02).
//
// Concurrency: one producer at a time; main samples the counters.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/perf"
	"github.com/strata-broker/strata/test/harness"
)

type options struct {
	mb         int
	record     int
	partitions int
	rounds     int
}

// topic is produced to: prefixed ACLs "team-7-", "team-7-a", … apply to it.
const topic = "team-7-abcd-bench"

func main() {
	var o options
	flag.IntVar(&o.mb, "mb", 512, "MiB produced per round")
	flag.IntVar(&o.record, "record-bytes", 1024, "record value size")
	flag.IntVar(&o.partitions, "partitions", 4, "partitions of the topic")
	flag.IntVar(&o.rounds, "rounds", 10, "rounds per broker")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "acl:", err)
		os.Exit(1)
	}
}

// broker is one child broker and its producer.
type broker struct {
	name  string
	child *harness.Child
	addr  string
	prod  *kgo.Client
	cpuMB []float64 // broker CPU ms per MiB, one per round
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "strata-bench-acl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := harness.BuildStrata(dir)
	if err != nil {
		return err
	}
	fmt.Printf("ACL authorizer cost: franz-go producing %d MiB of %d-byte records per round, acks=all, %d partitions, %d rounds per broker, one broker each\n",
		o.mb, o.record, o.partitions, o.rounds)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	none, err := start(ctx, bin, filepath.Join(dir, "none"), "no authorizer", nil, o)
	if err != nil {
		return err
	}
	defer none.close()
	acls, err := start(ctx, bin, filepath.Join(dir, "acls"), "10,000 ACLs", []string{
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		// Lets the producer's identity create the first ACLs, which
		// give it the cluster and its topic; every resource it then
		// touches has ACLs, so no check takes this shortcut.
		"allow.everyone.if.no.acl.found=true",
	}, o)
	if err != nil {
		return err
	}
	defer acls.close()

	value := make([]byte, o.record)
	_, _ = rand.Read(value) // incompressible, though batches go uncompressed
	// One round each unmeasured: connections, segments and the JIT-free
	// but cache-cold first appends.
	for _, b := range []*broker{none, acls} {
		if _, err := b.round(ctx, value, o.mb); err != nil {
			return fmt.Errorf("%s warm-up: %w", b.name, err)
		}
	}
	// Each round runs both brokers, in turns (ABBA), so a drift of the
	// machine over the run weighs on both alike; the figure is the median
	// of the rounds' own ratios, as the security table's.
	var ratios []float64
	for r := range o.rounds {
		order := []*broker{none, acls}
		if r%2 == 1 {
			order = []*broker{acls, none}
		}
		for _, b := range order {
			ms, err := b.round(ctx, value, o.mb)
			if err != nil {
				return fmt.Errorf("%s round %d: %w", b.name, r+1, err)
			}
			b.cpuMB = append(b.cpuMB, ms)
			fmt.Printf("round %d %-14s broker CPU %6.2f ms/MiB\n", r+1, b.name, ms)
		}
		ratios = append(ratios, acls.cpuMB[r]/none.cpuMB[r])
	}
	mn, ma := median(none.cpuMB), median(acls.cpuMB)
	fmt.Printf("median broker CPU per MiB: no authorizer %.2f ms, 10,000 ACLs %.2f ms; median of the rounds' ratios %.3f (target ≤ 1.02)\n", mn, ma, median(ratios))
	return nil
}

// start runs a broker in dir with the extra keys; with an authorizer it
// loads the ACLs before creating the topic.
func start(ctx context.Context, bin, dir, name string, keys []string, o options) (*broker, error) {
	child, addr, err := harness.StartServe(bin, dir, 2*time.Minute, keys...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b := &broker{name: name, child: child, addr: addr}
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.close()
		return nil, err
	}
	defer adm.Close()
	if len(keys) > 0 {
		if err := loadACLs(ctx, adm); err != nil {
			b.close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, int32(o.partitions), 1, nil, topic); err != nil {
		b.close()
		return nil, fmt.Errorf("%s: create topic: %w", name, err)
	}
	b.prod, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// loadACLs creates 10,000 ACLs in one CreateAcls request: the producer's
// (User:ANONYMOUS on the PLAINTEXT listener: ALL on the cluster and on
// its topic), then LITERAL and PREFIXED ones of other principals, 1,000
// prefixes "team-<j>-…" of one to five more letters.
func loadACLs(ctx context.Context, cl *kgo.Client) error {
	req := kmsg.NewPtrCreateACLsRequest()
	add := func(typ kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation) {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = typ, name, pat
		c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	add(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, "User:ANONYMOUS", kmsg.ACLOperationAll)
	add(kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, "User:ANONYMOUS", kmsg.ACLOperationAll)
	for i := range 4999 {
		add(kmsg.ACLResourceTypeTopic, fmt.Sprintf("topic-%d", i), kmsg.ACLResourcePatternTypeLiteral, fmt.Sprintf("User:u%d", i%100), kmsg.ACLOperationWrite)
	}
	for i := range 4999 {
		add(kmsg.ACLResourceTypeTopic, fmt.Sprintf("team-%d-%s", i%1000, "abcde"[:i%5]), kmsg.ACLResourcePatternTypePrefixed,
			fmt.Sprintf("User:u%d", i%100), kmsg.ACLOperation(3+i%3))
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create ACLs: %w", err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("create ACLs: %w", err)
		}
	}
	return nil
}

// round produces mb MiB and returns the broker's CPU ms per MiB.
func (b *broker) round(ctx context.Context, value []byte, mb int) (float64, error) {
	n := mb << 20 / len(value)
	cpu0 := perf.ProcessCPU(b.child.Pid())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range n {
		wg.Add(1)
		b.prod.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return float64(perf.ProcessCPU(b.child.Pid())-cpu0) / float64(time.Millisecond) / float64(mb), nil
}

func (b *broker) close() {
	if b.prod != nil {
		b.prod.Close()
	}
	b.child.Stop(os.Interrupt, 20*time.Second)
}

// median of xs, the mean of the middle two for an even count as the
// security table's medianOf (test/bench/table.go); 0 for none.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	mid := len(s) / 2
	if len(s)%2 == 0 {
		return (s[mid-1] + s[mid]) / 2
	}
	return s[mid]
}
