package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// round is one system's measures in one round.
type round struct {
	commits              []time.Duration // sorted round trips
	commitP50, commitP99 time.Duration
	rebalance            time.Duration
}

// createTopic creates the bench topic and returns its id.
func createTopic(ctx context.Context, addr, topic string, partitions int32) ([16]byte, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return [16]byte{}, fmt.Errorf("bench: client: %w", err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return [16]byte{}, fmt.Errorf("bench: create topic %s: %w", topic, err)
	}
	return resp.ID, nil
}

// commitVersion is the OffsetCommit version both systems are sent.
const commitVersion = 9

// measureCommits sends sequential OffsetCommits of the first `partitions`
// partitions of topic (simple commits: generation -1, no member, as an
// admin or a manually assigned consumer commits): unmeasured ones until
// both warmup commits and the settle time have passed (the first commit
// creates __consumer_offsets, whose partitions then load), then n
// measured ones, whose round-trip latencies it returns sorted. The topic
// goes by name and id (the id would count from OffsetCommit v10 on).
func measureCommits(ctx context.Context, addr, topic string, id [16]byte, partitions, warmup int, settle time.Duration, n int) ([]time.Duration, error) {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(8, commitVersion) // the same OffsetCommit version on both systems
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(versions), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	if err != nil {
		return nil, fmt.Errorf("bench: client: %w", err)
	}
	defer cl.Close()
	commit := func(i int) (time.Duration, error) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "bench-commits", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for p := range int32(partitions) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, int64(i), -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl)
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("bench: commit %d: %w", i, err)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return 0, fmt.Errorf("bench: commit %d of %s-%d: %w", i, t.Topic, p.Partition, err)
				}
			}
		}
		return d, nil
	}
	i := 0
	for begin := time.Now(); i < warmup || time.Since(begin) < settle; i++ {
		if _, err := commit(i); err != nil {
			return nil, err
		}
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		d, err := commit(i)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
		i++
	}
	slices.Sort(lat)
	return lat, nil
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// assignments tracks what every member of a group owns, from the clients'
// assignment callbacks.
type assignments struct {
	mu      sync.Mutex
	owned   []map[int32]bool
	changed chan struct{} // signalled (non-blocking) on every change
}

func (a *assignments) update(member int, m map[string][]int32, add bool) {
	a.mu.Lock()
	for _, ps := range m {
		for _, p := range ps {
			if add {
				a.owned[member][p] = true
			} else {
				delete(a.owned[member], p)
			}
		}
	}
	a.mu.Unlock()
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// complete reports whether every member owns a partition and the members
// together own all of them, each once.
func (a *assignments) complete(partitions int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[int32]bool{}
	for _, o := range a.owned {
		if len(o) == 0 {
			return false
		}
		for p := range o {
			if seen[p] {
				return false
			}
			seen[p] = true
		}
	}
	return len(seen) == partitions
}

// measureRebalance starts `members` group consumers of topic at once and
// returns the time from the start of the first to the moment all of them
// are assigned (every member owns a partition and every partition has one
// owner). The clients use franz-go's default cooperative-sticky balancer
// and a 100 ms heartbeat, on both systems. A non-nil tr records the
// members' group requests.
func measureRebalance(ctx context.Context, addr, topic, group string, members, partitions int, timeout time.Duration, tr *tracer) (time.Duration, error) {
	a := &assignments{owned: make([]map[int32]bool, members), changed: make(chan struct{}, 1)}
	clients := make([]*kgo.Client, members)
	defer func() {
		var wg sync.WaitGroup
		for _, cl := range clients {
			if cl != nil {
				wg.Add(1)
				go func() { defer wg.Done(); cl.Close() }()
			}
		}
		wg.Wait()
	}()
	// Every member's client is created on its own goroutine, released
	// together, so that the members start at once rather than one client
	// construction apart.
	release := make(chan struct{})
	errs := make([]error, members)
	var created sync.WaitGroup
	for i := range members {
		a.owned[i] = map[int32]bool{}
		opts := []kgo.Opt{
			kgo.SeedBrokers(addr),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.SessionTimeout(10 * time.Second),
			kgo.HeartbeatInterval(100 * time.Millisecond),
			kgo.DisableAutoCommit(),
			kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { a.update(i, m, true) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { a.update(i, m, false) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { a.update(i, m, false) }),
		}
		if tr != nil {
			opts = append(opts, kgo.WithHooks(tr.hook(i)))
		}
		created.Add(1)
		go func() {
			defer created.Done()
			<-release
			clients[i], errs[i] = kgo.NewClient(opts...)
		}()
	}
	start := time.Now()
	if tr != nil {
		tr.start = start
	}
	close(release)
	created.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("bench: group members: %w", err)
	}
	for _, cl := range clients {
		go func() {
			for {
				if fs := cl.PollFetches(ctx); fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
			}
		}()
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !a.complete(partitions) {
		select {
		case <-a.changed:
		case <-deadline.C:
			return 0, fmt.Errorf("bench: %d members not all assigned within %s", members, timeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return time.Since(start), nil
}
