package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// etcdBinary is Debian's etcd-server (`make deps`).
const etcdBinary = "/usr/bin/etcd"

// readyTimeout bounds how long etcd or a broker may take to start.
const readyTimeout = 60 * time.Second

// proc is one child process (etcd or a broker): what it runs and where
// its output goes, so that it can be started again; the running process
// is a harness.Child.
type proc struct {
	name    string
	args    []string
	logPath string
	child   *harness.Child // nil until started
}

func (p *proc) start() error {
	c, err := harness.StartChild(p.logPath, p.args...)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	p.child = c
	return nil
}

// cluster is one etcd and n brokers on loopback, all child processes.
type cluster struct {
	dir     string
	etcd    *proc
	brokers []*proc
	addrs   []string // Kafka listener of each broker, by node id - 1
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startCluster starts etcd and n brokers with a fresh data directory
// under dir, each broker with settings as --set flags.
func startCluster(bin, dir string, n int, settings map[string]string) (*cluster, error) {
	if _, err := os.Stat(etcdBinary); err != nil {
		return nil, fmt.Errorf("etcd not installed (run `make deps`): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster dir: %w", err)
	}
	c := &cluster{dir: dir}
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	pport, err := freePort()
	if err != nil {
		return nil, err
	}
	client := "http://127.0.0.1:" + strconv.Itoa(cport)
	peer := "http://127.0.0.1:" + strconv.Itoa(pport)
	c.etcd = &proc{name: "etcd", logPath: filepath.Join(dir, "etcd.log"), args: []string{etcdBinary,
		"--name", "e1", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e1=" + peer, "--max-txn-ops", "16384"}}
	if err := c.etcd.start(); err != nil {
		return nil, err
	}
	if err := waitTCP(c.etcd, "127.0.0.1:"+strconv.Itoa(cport)); err != nil {
		c.stop()
		return nil, err
	}
	for id := 1; id <= n; id++ {
		port, err := freePort()
		if err != nil {
			c.stop()
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		args := []string{bin, "serve",
			"--set", "node.id=" + strconv.Itoa(id),
			"--set", "listeners=PLAINTEXT://" + addr,
			"--set", "log.dirs=" + filepath.Join(dir, "broker-"+strconv.Itoa(id)),
			"--set", "metadata.etcd.endpoints=" + client,
			"--set", "metrics.listener=",
			"--set", "console.listener=",
		}
		for k, v := range settings {
			args = append(args, "--set", k+"="+v)
		}
		b := &proc{name: "broker " + strconv.Itoa(id), logPath: filepath.Join(dir, "broker-"+strconv.Itoa(id)+".log"), args: args}
		c.brokers = append(c.brokers, b)
		c.addrs = append(c.addrs, addr)
		if err := c.startBroker(id); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// startBroker (re)starts broker id and waits until it answers Metadata.
func (c *cluster) startBroker(id int) error {
	b := c.brokers[id-1]
	if err := b.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := ping(ctx, c.addrs[id-1])
		cancel()
		if err == nil {
			return nil
		}
		if !b.child.Running() || time.Now().After(deadline) {
			return fmt.Errorf("%s not ready (log %s): %w", b.name, b.logPath, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ping asks addr for metadata.
func ping(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	return cl.Ping(ctx)
}

// waitTCP waits until addr accepts connections or p exits.
func waitTCP(p *proc, addr string) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if !p.child.Running() {
			return fmt.Errorf("%s exited during start-up (log %s)", p.name, p.logPath)
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("%s not listening on %s", p.name, addr), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop terminates the brokers, then etcd.
func (c *cluster) stop() {
	for _, b := range c.brokers {
		b.child.Stop(syscall.SIGTERM, 30*time.Second)
	}
	if c.etcd != nil {
		c.etcd.child.Stop(syscall.SIGTERM, 30*time.Second)
	}
}
