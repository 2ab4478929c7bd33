package fault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-broker/strata/test/harness"
)

const (
	topic      = "chaos"
	partitions = 3
	sessionMs  = 3000
	// settle bounds every wait for the cluster to react to a fault or heal.
	settle = 60 * time.Second
)

// envInt reads a positive integer from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// nemesisRand is the nemesis's RNG, seeded from STRATA_FAULT_SEED or the
// clock, and its seed.
func nemesisRand(t *testing.T) (uint64, *rand.Rand) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("STRATA_FAULT_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("STRATA_FAULT_SEED=%q: %v", s, err)
		}
	}
	return seed, rand.New(rand.NewPCG(seed, seed^0x5eed))
}

// fault is one kind of nemesis action; inject returns once the fault has
// had its effect and been healed.
type fault struct {
	name   string
	inject func(c *cluster, rng *rand.Rand) string
}

var faults = []fault{
	{"kill -9 leader", killLeader},
	{"SIGSTOP past lease", pauseBroker},
	{"network cut", cutBroker},
	{"kill -9 leader", killLeader},
	{"etcd member restart", restartEtcd},
	{"kill -9 leader and a follower", killTwo},
	{"etcd quorum lost", loseEtcdQuorum},
	{"leader cut off etcd", cutLeaderFromEtcd},
}

// TestNemesis is the robustness test: the nemesis injects each fault of
// faults in turn while the producers write, then the checker proves
// nothing acknowledged was lost (see the package doc).
func TestNemesis(t *testing.T) {
	total := envInt(t, "STRATA_FAULT_RECORDS", 20000)
	rounds := envInt(t, "STRATA_FAULT_ROUNDS", 1)
	seed, rng := nemesisRand(t)
	t.Logf("nemesis: seed %d (STRATA_FAULT_SEED=%d to replay), %d records, %d round(s)", seed, seed, total, rounds)

	c := startCluster(t, 3, map[string]string{
		"broker.session.timeout.ms":  strconv.Itoa(sessionMs),
		"replica.lag.time.max.ms":    "2000",
		"min.insync.replicas":        "2",
		"default.replication.factor": "3",
		"auto.create.topics.enable":  "false",
	})
	c.createTopic(topic)

	s := newStream(t, c.seeds(), topic, 2, partitions, total)
	steps := rounds * len(faults)
	chunk := total / (steps + 1)
	issued := 0
	injected := map[string]int{}
	began := time.Now()
	for step := range steps {
		// Half the chunk goes before the fault, half while it lasts
		// (for the faults that say when) or after it.
		half := chunk / 2
		s.release(issued, half)
		from := issued + half
		c.midFault = func() { s.release(from, chunk-half) }
		issued += chunk
		f := faults[step%len(faults)]
		start := time.Now()
		detail := f.inject(c, rng)
		c.duringFault()
		healed := c.waitFullISR(topic, partitions, settle)
		injected[f.name]++
		acked, failed := s.counts()
		t.Logf("nemesis: step %d/%d %s: %s; healed %v after, %v in all; %d acked, %d failed so far",
			step+1, steps, f.name, detail, healed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), acked, failed)
	}
	s.release(issued, total-issued)
	s.finish()
	t.Logf("nemesis: producers done after %v", time.Since(began).Round(time.Millisecond))

	c.waitFullISR(topic, partitions, settle)
	sizes := c.waitIdentical(topic, partitions, settle)
	log := harness.ReadAll(t, c.seeds()[0], topic)
	v := s.check(log)
	n := 0
	for _, k := range injected {
		n += k
	}
	t.Logf("nemesis: seed %d: records acked %d, failed %d, read %d (written but unacked %d), lost %d, duplicated %d, offset gaps %d, out of order %d; replicas identical (log bytes per partition %v); faults injected %d %v",
		seed, v.acked, s.failed, v.read, v.unackedPresent, v.lost, v.duplicated, v.gaps, v.disorder, sizes, n, injected)
	if s.failed > 0 {
		t.Logf("nemesis: last produce error: %v", s.lastEr)
	}
	for i, p := range v.problems {
		if i == 20 {
			t.Errorf("… and %d more", len(v.problems)-20)
			break
		}
		t.Error(p)
	}
	if v.acked == 0 {
		t.Errorf("no record was acknowledged")
	}
}

// leaderOf asks a running broker which broker leads topic's partition p.
func leaderOf(c *cluster, topic string, p int32) int32 {
	c.t.Helper()
	var leader int32
	c.waitFor(fmt.Sprintf("a leader of %s/%d", topic, p), settle, func() (bool, string) {
		for _, n := range c.nodes {
			v, err := c.metadata(n.id, topic)
			if err != nil {
				continue
			}
			if ps, ok := v.parts[p]; ok && ps.leader > 0 {
				leader = ps.leader
				return true, ""
			}
		}
		return false, "no broker names a leader"
	})
	return leader
}

// killLeader kill -9s the leader of a random partition, waits for the
// controller to elect another, and restarts the killed broker.
func killLeader(c *cluster, rng *rand.Rand) string {
	p := int32(rng.IntN(partitions))
	id := leaderOf(c, topic, p)
	c.node(id).proc.Kill9()
	moved := c.waitGone(id, topic, settle)
	c.node(id).proc.Restart()
	return fmt.Sprintf("broker %d (leader of partition %d) killed; leadership moved after %v", id, p, moved.Round(time.Millisecond))
}

// pauseBroker SIGSTOPs a random broker until its lease has expired and its
// leaderships moved, then SIGCONTs it.
func pauseBroker(c *cluster, rng *rand.Rand) string {
	id := int32(rng.IntN(len(c.nodes)) + 1)
	c.node(id).proc.Pause()
	gone := c.waitGone(id, topic, settle)
	c.node(id).proc.Resume()
	return fmt.Sprintf("broker %d stopped; lease lost after %v; %s", id, gone.Round(time.Millisecond), c.revive(id))
}

// cutBroker cuts a random broker off (its listener and its etcd links)
// until its lease expires, then heals the network.
func cutBroker(c *cluster, rng *rand.Rand) string {
	id := int32(rng.IntN(len(c.nodes)) + 1)
	c.node(id).cut()
	gone := c.waitGone(id, topic, settle)
	c.node(id).heal()
	return fmt.Sprintf("broker %d cut off; lease lost after %v; %s", id, gone.Round(time.Millisecond), c.revive(id))
}

// killTwo kill -9s the leader of a random partition and one other broker
// at once, so only one replica is left, then restarts both.
func killTwo(c *cluster, rng *rand.Rand) string {
	p := int32(rng.IntN(partitions))
	leader := leaderOf(c, topic, p)
	other := (leader+int32(rng.IntN(len(c.nodes)-1)))%int32(len(c.nodes)) + 1
	c.node(leader).proc.Kill9()
	c.node(other).proc.Kill9()
	survivor := 6 - leader - other
	gone := c.waitFor(fmt.Sprintf("broker %d to see brokers %d and %d go", survivor, leader, other), settle, func() (bool, string) {
		v, err := c.metadata(survivor, topic)
		if err != nil {
			return false, err.Error()
		}
		return len(v.brokers) == 1, fmt.Sprintf("broker %d lists %v", survivor, v.brokers)
	})
	c.node(other).proc.Restart()
	c.node(leader).proc.Restart()
	return fmt.Sprintf("brokers %d (leader of partition %d) and %d killed; their leases ran out after %v", leader, p, other, gone.Round(time.Millisecond))
}

// restartEtcd restarts a random etcd member.
func restartEtcd(c *cluster, rng *rand.Rand) string {
	m := c.etcd.Members()[rng.IntN(len(c.etcd.Members()))]
	m.Restart()
	return m.String() + " restarted"
}

// loseEtcdQuorum stops two of the three etcd members — SIGSTOP, or kill
// -9 and a restart on their data, chosen at random — for etcdOutage: no
// metadata can be read or written, no lease renewed. The brokers serve on
// from their cached metadata meanwhile (records are produced during the
// outage); afterwards they keep or renew their registrations (a paused
// leader expires the leases on waking, a newly elected one extends them),
// the controller moves the leaderships of brokers it found gone, and
// every broker serves again without having been restarted.
func loseEtcdQuorum(c *cluster, rng *rand.Rand) string {
	c.t.Helper()
	pids, renewed, outages := map[int32]int{}, map[int32]int{}, map[int32]int{}
	for _, n := range c.nodes {
		pids[n.id] = n.proc.Pid()
		log := n.proc.Log()
		renewed[n.id] = strings.Count(log, "broker registered again")
		outages[n.id] = strings.Count(log, outageBegins)
	}
	ms := c.etcd.Members()
	down := []*harness.EtcdMember{}
	for _, i := range rng.Perm(len(ms))[:2] {
		down = append(down, ms[i])
	}
	pause := rng.IntN(2) == 0
	how := "killed"
	if pause {
		how = "paused"
	}
	began := time.Now()
	for _, m := range down {
		if pause {
			m.Pause()
		} else {
			m.Kill()
		}
	}
	c.duringFault()
	time.Sleep(time.Until(began.Add(etcdOutage(c.t))))
	for _, m := range down {
		if pause {
			m.Resume()
		} else {
			m.Start()
		}
	}
	for _, m := range down {
		m.WaitHealthy()
	}
	healed := c.waitMetadataFollowed(fmt.Sprintf("probe-%d", began.UnixNano()))
	var again []int32
	for _, n := range c.nodes {
		if !n.proc.Running() || n.proc.Pid() != pids[n.id] {
			c.t.Fatalf("broker %d did not serve through the etcd outage: running %v, pid %d (was %d)", n.id, n.proc.Running(), n.proc.Pid(), pids[n.id])
		}
		log := n.proc.Log()
		if strings.Count(log, "broker registered again") > renewed[n.id] {
			again = append(again, n.id)
		}
		// Once; or twice when the surviving member, still leader for the
		// election timeout before it notices the lost quorum, renewed the
		// broker's lease in between (an honest "reachable again").
		if k := strings.Count(log, outageBegins) - outages[n.id]; k < 1 || k > 2 {
			c.t.Errorf("broker %d logged the etcd outage's beginning %d times, want once (twice if a lone leader answered before stepping down)", n.id, k)
		}
	}
	return fmt.Sprintf("%s and %s %s for %v; every broker follows the metadata again %v later, none restarted; registered again (lease expired): %v",
		down[0].Name(), down[1].Name(), how, etcdOutage(c.t), healed.Round(time.Millisecond), again)
}

// waitMetadataFollowed creates a topic named probe through the cluster
// and waits until every broker lists it: metadata is written again and
// every broker's cache follows etcd.
func (c *cluster) waitMetadataFollowed(probe string) time.Duration {
	c.t.Helper()
	start := time.Now()
	adm := kadm.NewClient(c.client)
	c.waitFor("a metadata write to succeed", settle, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := adm.CreateTopic(ctx, 1, 1, nil, probe)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return false, err.Error()
		}
		return true, ""
	})
	for _, n := range c.nodes {
		c.waitFor(fmt.Sprintf("broker %d to list topic %s", n.id, probe), settle, func() (bool, string) {
			v, err := c.metadata(n.id, probe)
			if err != nil {
				return false, err.Error()
			}
			return len(v.parts) == 1, fmt.Sprintf("broker %d sees %+v", n.id, v)
		})
	}
	return time.Since(start)
}

// cutLeaderFromEtcd cuts the leader of a random partition off etcd only:
// clients and the other brokers still reach it, and it serves on from its
// cached metadata as if it still led. Its lease runs out, the controller
// moves its leaderships to the other ISR members, and records are
// produced meanwhile; the deposed leader must not acknowledge any of
// those it takes (its followers fetch from the new leader, so its high
// watermark stalls, and its ISR cannot shrink: etcd fences the write).
// Healed, it learns the new leader epochs, truncates, and registers again
// by itself.
func cutLeaderFromEtcd(c *cluster, rng *rand.Rand) string {
	p := int32(rng.IntN(partitions))
	id := leaderOf(c, topic, p)
	n := c.node(id)
	began := time.Now()
	for _, px := range n.etcd {
		px.Cut()
	}
	gone := c.waitGone(id, topic, settle)
	c.duringFault()
	// Deposed for a while: past replica.lag.time.max.ms, so that it tries
	// (and fails) to shrink its ISR to itself.
	time.Sleep(max(time.Until(began.Add(etcdOutage(c.t))), 3*time.Second))
	for _, px := range n.etcd {
		px.Heal()
	}
	return fmt.Sprintf("broker %d (leader of partition %d) cut off etcd for %v; its leaderships moved after %v; %s",
		id, p, time.Since(began).Round(time.Millisecond), gone.Round(time.Millisecond), c.revive(id))
}
