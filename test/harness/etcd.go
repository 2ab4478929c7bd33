package harness

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// etcdBinary is Debian's etcd-server, installed by scripts/install-test-deps.sh.
const etcdBinary = "/usr/bin/etcd"

// Etcd is a real etcd server process on loopback ports, for tests that
// run brokers against an external metadata store.
type Etcd struct {
	t        testing.TB
	dir      string
	client   int
	peer     int
	child    *Child
	logPath  string
	endpoint string
}

// StartEtcd starts a single-member etcd in a temp dir and waits until it
// answers its health check; it is stopped when the test ends.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	e := NewEtcd(t)
	e.Launch()
	return e
}

// NewEtcd prepares a single-member etcd (directories, ports, endpoint)
// without starting it: brokers can be pointed at an etcd that is not up
// yet. Launch starts it.
func NewEtcd(t testing.TB) *Etcd {
	t.Helper()
	requireFile(t, etcdBinary, "etcd (Debian package etcd-server; run `make deps`)")
	e := &Etcd{t: t, dir: t.TempDir(), client: FreePort(t), peer: FreePort(t)}
	e.logPath = filepath.Join(e.dir, "etcd.log")
	e.endpoint = "http://127.0.0.1:" + strconv.Itoa(e.client)
	return e
}

// Endpoint is the client URL.
func (e *Etcd) Endpoint() string { return e.endpoint }

func (e *Etcd) start() {
	e.t.Helper()
	peer := "http://127.0.0.1:" + strconv.Itoa(e.peer)
	ready := strings.Count(readFile(e.logPath), etcdReady)
	child, err := StartChild(e.logPath, etcdBinary,
		"--name", "n1", "--data-dir", filepath.Join(e.dir, "data"),
		"--listen-client-urls", e.endpoint, "--advertise-client-urls", e.endpoint,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "n1="+peer, "--max-txn-ops", "16384")
	if err != nil {
		e.t.Fatalf("%v", err)
	}
	e.child = child
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		// Healthy, and this etcd is the one answering: its port, free
		// when picked, may have been taken by another test's etcd since,
		// which a health check alone would accept.
		if err := e.healthy(ctx); err == nil && strings.Count(readFile(e.logPath), etcdReady) > ready {
			return
		}
		select {
		case <-child.Exited():
			e.t.Fatalf("harness: etcd exited during start-up:\n%s", logTail(e.logPath, 30))
		case <-ctx.Done():
			e.t.Fatalf("harness: etcd not healthy after %v:\n%s", startTimeout, logTail(e.logPath, 30))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// etcdReady is what etcd logs once it serves clients on its port.
const etcdReady = "ready to serve client requests"

// readFile is path's content, empty if it cannot be read.
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func (e *Etcd) healthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.endpoint+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd health: %s", resp.Status)
	}
	return nil
}

// Stop terminates etcd and waits for it to exit.
func (e *Etcd) Stop() { e.child.Stop(os.Interrupt, startTimeout) }

// Kill sends SIGKILL (a crash) and waits for etcd to die.
func (e *Etcd) Kill() { e.child.Stop(syscall.SIGKILL, startTimeout) }

// Restart starts etcd again, after Stop or Kill, on the same data
// directory and ports, and waits until it is healthy.
func (e *Etcd) Restart() {
	e.t.Helper()
	if e.child.Running() {
		e.t.Fatalf("harness: etcd restarted while running")
	}
	e.start()
}

// Pause stops etcd with SIGSTOP: it keeps its sockets open and answers
// nothing, as a hung server does. It is resumed at test end.
func (e *Etcd) Pause() {
	e.t.Helper()
	if err := e.child.Pause(OpTimeout); err != nil {
		e.t.Fatalf("harness: pause etcd: %v", err)
	}
	child := e.child
	e.t.Cleanup(func() { _ = child.Resume() })
}

// Resume continues a paused etcd.
func (e *Etcd) Resume() {
	e.t.Helper()
	if err := e.child.Resume(); err != nil {
		e.t.Fatalf("harness: resume etcd: %v", err)
	}
}

// Launch starts an Etcd that was prepared with NewEtcd, waiting until it
// is healthy; it is stopped when the test ends.
func (e *Etcd) Launch() {
	e.t.Helper()
	e.start()
	e.t.Cleanup(e.Stop)
}
