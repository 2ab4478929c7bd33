package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EtcdCluster is a multi-member etcd cluster of real etcd processes
// (Debian's etcd 3.4) on loopback ports, for tests of brokers against a
// replicated metadata store that survives the restart of one member.
type EtcdCluster struct {
	t       testing.TB
	members []*EtcdMember
}

// EtcdMember is one member process of an EtcdCluster.
type EtcdMember struct {
	t        testing.TB
	name     string
	dir      string
	endpoint string // client URL
	peerURL  string
	cluster  string // --initial-cluster
	logPath  string
	child    *Child
}

// StartEtcdCluster starts an n-member etcd cluster in temp dirs and waits
// until every member answers its health check (which needs a raft leader);
// the members are stopped when the test ends.
func StartEtcdCluster(t testing.TB, n int) *EtcdCluster {
	t.Helper()
	requireFile(t, etcdBinary, "etcd (Debian package etcd-server; run `make deps`)")
	c := &EtcdCluster{t: t}
	var initial []string
	for i := range n {
		m := &EtcdMember{t: t, name: "m" + strconv.Itoa(i+1), dir: t.TempDir()}
		m.endpoint = "http://127.0.0.1:" + strconv.Itoa(FreePort(t))
		m.peerURL = "http://127.0.0.1:" + strconv.Itoa(FreePort(t))
		m.logPath = filepath.Join(m.dir, "etcd.log")
		initial = append(initial, m.name+"="+m.peerURL)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.cluster = strings.Join(initial, ",")
		m.launch()
		t.Cleanup(m.Stop)
	}
	for _, m := range c.members {
		m.waitHealthy()
	}
	return c
}

// Endpoints are the client URLs of every member.
func (c *EtcdCluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.endpoint
	}
	return out
}

// Members are the cluster's members in start order.
func (c *EtcdCluster) Members() []*EtcdMember { return c.members }

// Endpoint is the member's client URL.
func (m *EtcdMember) Endpoint() string { return m.endpoint }

// Name is the member's etcd name (m1, m2, …).
func (m *EtcdMember) Name() string { return m.name }

// Running reports whether the member process is alive.
func (m *EtcdMember) Running() bool { return m.child.Running() }

// Restart stops the member (SIGINT) and starts it again on the same data
// directory and ports, waiting until it is healthy.
func (m *EtcdMember) Restart() {
	m.t.Helper()
	m.Stop()
	m.launch()
	m.waitHealthy()
}

// Stop terminates the member and waits for it to exit; stopping a stopped
// member does nothing.
func (m *EtcdMember) Stop() { m.child.Stop(os.Interrupt, startTimeout) }

// Kill sends SIGKILL (a crash) and waits for the member to die.
func (m *EtcdMember) Kill() { m.child.Stop(syscall.SIGKILL, startTimeout) }

// Start starts a stopped or killed member again on its data directory and
// ports without waiting (it is healthy only once a quorum runs); see
// WaitHealthy.
func (m *EtcdMember) Start() {
	m.t.Helper()
	if m.child.Running() {
		m.t.Fatalf("harness: %s started while running", m)
	}
	m.launch()
}

// WaitHealthy waits until the member answers its health check (which
// needs a raft leader).
func (m *EtcdMember) WaitHealthy() {
	m.t.Helper()
	m.waitHealthy()
}

// Pause stops the member with SIGSTOP: it keeps its sockets open and
// answers nothing. It is resumed at test end.
func (m *EtcdMember) Pause() {
	m.t.Helper()
	if err := m.child.Pause(OpTimeout); err != nil {
		m.t.Fatalf("harness: pause %s: %v", m, err)
	}
	child := m.child
	m.t.Cleanup(func() { _ = child.Resume() })
}

// Resume continues a paused member.
func (m *EtcdMember) Resume() {
	m.t.Helper()
	if err := m.child.Resume(); err != nil {
		m.t.Fatalf("harness: resume %s: %v", m, err)
	}
}

// launch starts the member process without waiting for it to be healthy
// (a fresh member cannot be healthy before a quorum of its peers runs).
func (m *EtcdMember) launch() {
	m.t.Helper()
	child, err := StartChild(m.logPath, etcdBinary,
		"--name", m.name, "--data-dir", filepath.Join(m.dir, "data"),
		"--listen-client-urls", m.endpoint, "--advertise-client-urls", m.endpoint,
		"--listen-peer-urls", m.peerURL, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", m.cluster, "--initial-cluster-state", "new",
		"--initial-cluster-token", "strata-test",
		"--heartbeat-interval", "50", "--election-timeout", "500",
		"--max-txn-ops", "16384")
	if err != nil {
		m.t.Fatalf("harness: etcd %s: %v", m.name, err)
	}
	m.child = child
}

func (m *EtcdMember) waitHealthy() {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	probe := &Etcd{endpoint: m.endpoint}
	for {
		if err := probe.healthy(ctx); err == nil {
			return
		}
		select {
		case <-m.child.Exited():
			m.t.Fatalf("harness: etcd %s exited during start-up:\n%s", m.name, logTail(m.logPath, 30))
		case <-ctx.Done():
			m.t.Fatalf("harness: etcd %s not healthy after %v:\n%s", m.name, startTimeout, logTail(m.logPath, 30))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// String names the member and its endpoint, for logs.
func (m *EtcdMember) String() string { return fmt.Sprintf("etcd %s (%s)", m.name, m.endpoint) }
