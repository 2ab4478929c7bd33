package fault

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/internal/faultproxy"
	"github.com/strata-broker/strata/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// node is one broker process and the proxies it is reached through: its
// Kafka listener is advertised as kafka's address, and it talks to each
// etcd member through its own proxy, so cutting them isolates the broker:
// nobody reaches it and it loses its lease. (Its own connections to the
// other brokers' proxies stay up, so it is a partial partition, the kind
// that most tempts a deposed leader to keep acting.)
type node struct {
	id    int32
	proc  *harness.Process
	kafka *faultproxy.Proxy
	etcd  []*faultproxy.Proxy
}

// cut isolates the node: nobody reaches its listener and it reaches no etcd member.
func (n *node) cut() {
	n.kafka.Cut()
	for _, p := range n.etcd {
		p.Cut()
	}
}

func (n *node) heal() {
	n.kafka.Heal()
	for _, p := range n.etcd {
		p.Heal()
	}
}

// cluster is three brokers on a three-member etcd.
type cluster struct {
	t      *testing.T
	etcd   *harness.EtcdCluster
	nodes  []*node
	client *kgo.Client // for metadata requests aimed at one broker
	// midFault, when set, is run once while a fault lasts (duringFault):
	// the nemesis hands out records then.
	midFault func()
}

// duringFault runs midFault once, if set.
func (c *cluster) duringFault() {
	if f := c.midFault; f != nil {
		c.midFault = nil
		f()
	}
}

// startCluster starts etcd and n broker processes with the given extra settings.
func startCluster(t *testing.T, n int, extra map[string]string) *cluster {
	t.Helper()
	c := &cluster{t: t, etcd: harness.StartEtcdCluster(t, 3)}
	for i := range n {
		nd := &node{id: int32(i + 1), kafka: faultproxy.Start(t, "")}
		var eps []string
		for _, ep := range c.etcd.Endpoints() {
			px := faultproxy.Start(t, strings.TrimPrefix(ep, "http://"))
			nd.etcd = append(nd.etcd, px)
			eps = append(eps, "http://"+px.Addr())
		}
		cfg := map[string]string{
			"node.id":                 strconv.Itoa(int(nd.id)),
			"advertised.listeners":    "PLAINTEXT://" + nd.kafka.Addr(),
			"metadata.etcd.endpoints": strings.Join(eps, ","),
		}
		for k, v := range extra {
			cfg[k] = v
		}
		nd.proc = harness.StartProcess(t, cfg)
		nd.kafka.SetTarget(nd.proc.Addr())
		c.nodes = append(c.nodes, nd)
	}
	c.client = harness.NewClient(t, c.seeds()[0], kgo.SeedBrokers(c.seeds()...))
	return c
}

// createTopic creates topic with partitions partitions, replication factor
// 3 and min.insync.replicas=2, and waits until every replica is in sync.
func (c *cluster) createTopic(topic string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	resp, err := kadm.NewClient(c.client).CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	cancel()
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
	c.waitFullISR(topic, partitions, settle)
}

// seeds are the advertised (proxy) addresses of every broker.
func (c *cluster) seeds() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.kafka.Addr())
	}
	return out
}

func (c *cluster) node(id int32) *node { return c.nodes[id-1] }

// partState is one partition as one broker's metadata cache sees it.
type partState struct {
	leader int32
	isr    []int32
}

// view is the cluster as one broker's metadata says.
type view struct {
	brokers []int32
	parts   map[int32]partState
}

// metadata asks broker id (through its proxy) for topic's metadata.
func (c *cluster) metadata(id int32, topic string) (view, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	// Make sure the client knows every broker id before aiming at one.
	if _, err := req.RequestWith(ctx, c.client); err != nil {
		return view{}, fmt.Errorf("metadata: %w", err)
	}
	kresp, err := c.client.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return view{}, fmt.Errorf("metadata from broker %d: %w", id, err)
	}
	resp := kresp.(*kmsg.MetadataResponse)
	v := view{parts: map[int32]partState{}}
	for _, b := range resp.Brokers {
		v.brokers = append(v.brokers, b.NodeID)
	}
	slices.Sort(v.brokers)
	for _, tp := range resp.Topics {
		if tp.Topic == nil || *tp.Topic != topic || tp.ErrorCode != 0 {
			continue
		}
		for _, p := range tp.Partitions {
			isr := slices.Clone(p.ISR)
			slices.Sort(isr)
			v.parts[p.Partition] = partState{leader: p.Leader, isr: isr}
		}
	}
	return v, nil
}

// waitFor polls cond every 50 ms until it holds or timeout passes, failing
// the test with what and the last reason cond gave.
func (c *cluster) waitFor(what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	c.t.Helper()
	start := time.Now()
	var why string
	for {
		var ok bool
		if ok, why = cond(); ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFullISR waits until every broker reports all of topic's partitions
// with a leader and all n replicas in sync, and every broker registered.
func (c *cluster) waitFullISR(topic string, partitions int32, timeout time.Duration) time.Duration {
	c.t.Helper()
	return c.waitFor("every replica back in sync", timeout, func() (bool, string) {
		for _, n := range c.nodes {
			v, err := c.metadata(n.id, topic)
			if err != nil {
				return false, err.Error()
			}
			if len(v.brokers) != len(c.nodes) {
				return false, fmt.Sprintf("broker %d lists brokers %v", n.id, v.brokers)
			}
			for p := range partitions {
				ps, ok := v.parts[p]
				if !ok || ps.leader < 0 || len(ps.isr) != len(c.nodes) {
					return false, fmt.Sprintf("broker %d sees partition %d as %+v", n.id, p, ps)
				}
			}
		}
		return true, ""
	})
}

// waitGone waits until a broker other than id no longer lists id and sees
// none of topic's partitions led by it: its lease ran out and the
// controller moved its leaderships.
func (c *cluster) waitGone(id int32, topic string, timeout time.Duration) time.Duration {
	c.t.Helper()
	observer := id%int32(len(c.nodes)) + 1
	return c.waitFor(fmt.Sprintf("broker %d to leave the cluster", id), timeout, func() (bool, string) {
		v, err := c.metadata(observer, topic)
		if err != nil {
			return false, err.Error()
		}
		if slices.Contains(v.brokers, id) {
			return false, fmt.Sprintf("broker %d still lists %d", observer, id)
		}
		for p, ps := range v.parts {
			if ps.leader == id || ps.leader < 0 {
				return false, fmt.Sprintf("partition %d leader %d", p, ps.leader)
			}
		}
		return true, ""
	})
}

// revive waits until broker id, whose lease ran out while it was stopped
// or cut off, has registered again by itself: a Strata broker whose
// registration expired registers anew and serves on, without a restart.
func (c *cluster) revive(id int32) string {
	c.t.Helper()
	n := c.node(id)
	observer := id%int32(len(c.nodes)) + 1
	took := c.waitFor(fmt.Sprintf("broker %d to register again", id), settle, func() (bool, string) {
		if !n.proc.Running() {
			c.t.Fatalf("broker %d exited after losing its lease; it should have registered again", id)
		}
		v, err := c.metadata(observer, topic)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(v.brokers, id), fmt.Sprintf("broker %d lists %v", observer, v.brokers)
	})
	return fmt.Sprintf("it registered again after %v", took.Round(time.Millisecond))
}

// logBytes concatenates the .log segment files of one partition replica.
func logBytes(n *node, topic string, p int32) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(n.proc.Dir(), fmt.Sprintf("%s-%d", topic, p), "*.log"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		out = append(out, data...)
	}
	return out, nil
}

// waitIdentical waits until every replica of every partition holds the
// same bytes and returns the size of each partition's log.
func (c *cluster) waitIdentical(topic string, partitions int32, timeout time.Duration) map[int32]int {
	c.t.Helper()
	sizes := map[int32]int{}
	c.waitFor("byte-identical replicas", timeout, func() (bool, string) {
		for p := range partitions {
			first, err := logBytes(c.nodes[0], topic, p)
			if err != nil {
				return false, err.Error()
			}
			for _, n := range c.nodes[1:] {
				other, err := logBytes(n, topic, p)
				if err != nil {
					return false, err.Error()
				}
				if !bytes.Equal(first, other) {
					return false, fmt.Sprintf("partition %d: broker 1 has %d bytes, broker %d has %d", p, len(first), n.id, len(other))
				}
			}
			sizes[p] = len(first)
		}
		return true, ""
	})
	return sizes
}
