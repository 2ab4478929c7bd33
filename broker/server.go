package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata/etcdstore"
)

// Server is one Strata broker.
type Server struct {
	cfg *config.Broker
	log *slog.Logger

	ready       chan struct{}
	mu          sync.Mutex
	addr        string
	addrs       map[string]string // bound address by listener name
	consoleAddr string            // console.listener's bound address
	node        *node             // the parts of the current Run (tests look into it)

	env *handler.Env

	// beforeStart, when set (by tests), runs before each start-up step
	// and fails it with its error.
	beforeStart func(step string) error
}

// New checks the configuration; Run starts serving.
func New(cfg *config.Broker, log *slog.Logger) (*Server, error) {
	if cfg == nil {
		return nil, errors.New("broker: nil config")
	}
	if len(cfg.Listeners) == 0 {
		return nil, errors.New("broker: listeners is empty")
	}
	if len(cfg.LogDirs) == 0 {
		return nil, errors.New("broker: log.dirs is empty")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Server{cfg: cfg, log: log, ready: make(chan struct{})}, nil
}

// Addr is the address the first Kafka listener is bound to ("" before Run
// began listening).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// ListenerAddr is the address listener name is bound to ("" before Run
// began listening, or for no such listener).
func (s *Server) ListenerAddr(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[name]
}

// Ready is closed once the broker listens and has loaded its metadata and
// partitions.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run starts the broker's parts in order (components), serves until ctx
// is done or a part fails (its broker id taken by another live process,
// the Kafka listener cannot accept; an etcd outage is ridden out), then
// stops them in reverse order: a controlled
// shutdown while still serving, then connections drain, logs are flushed
// with a clean-shutdown marker, the lease is revoked and the metadata
// store closed. A step that fails to start stops the steps before it;
// either way nothing Run started is left running or open when it returns.
// The error names the step that failed; it is nil after a stop asked by
// ctx that went cleanly.
func (s *Server) Run(ctx context.Context) error {
	n := newNode()
	s.mu.Lock()
	s.node = n
	s.mu.Unlock()
	raiseFDLimit(s.log)
	life := newLifecycle(ctx, s.log, s.beforeStart)
	if err := life.Start(s.components(n)); err != nil {
		return err
	}
	s.log.Info("strata broker serving", "node.id", s.cfg.NodeID, "listener", s.Addr(), "advertised", n.self.Addr(), "etcd", n.endpoints, "cluster.id", n.store.ClusterID())
	close(s.ready)
	<-life.Stopping()
	if f := life.Failure(); f != nil {
		s.log.Error("strata broker stopping", "err", f)
	} else {
		s.log.Info("strata broker stopping")
	}
	err := life.Stop()
	return errors.Join(life.Failure(), err)
}

// startEtcd starts the embedded etcd in metadata.etcd.dir unless
// metadata.etcd.endpoints names an external cluster, and reports its
// space (metadataSpaceCollector).
func (s *Server) startEtcd(n *node) error {
	if len(s.cfg.EtcdEndpoints) > 0 {
		n.endpoints = s.cfg.EtcdEndpoints
		return nil
	}
	emb, err := etcdstore.StartEmbeddedWith(etcdstore.EmbeddedConfig{
		Dir:               s.cfg.EtcdDir,
		QuotaBackendBytes: s.cfg.EtcdQuotaBackendBytes,
		ReserveBytes:      s.cfg.EtcdReserveBytes,
		Log:               s.log,
	})
	if err != nil {
		return err
	}
	n.emb, n.closeEtcd, n.endpoints = emb, emb.Close, emb.Endpoints()
	n.metrics.MustRegister(newMetadataSpaceCollector(func() metadataSpace {
		st := emb.SpaceStats()
		return metadataSpace{backend: st.BackendBytes, inUse: st.BackendInUseBytes, quota: st.QuotaBytes,
			avail: st.DiskAvailableBytes, reserve: st.ReserveBytes, noSpace: st.NoSpace}
	}))
	return nil
}

// embeddedSpace is the embedded etcd's space guard as the broker's parts
// use it (etcdstore.Embedded; only this file knows etcdstore).
type embeddedSpace interface {
	// Guard enforces the reserve until ctx ends.
	Guard(ctx context.Context)
	// AllowWrite charges n bytes to be written to etcd's disk.
	AllowWrite(n int64) error
	// Dir is etcd's data directory.
	Dir() string
}

// spaceCheck is what the logs ask before an append: the embedded etcd's
// reserve when the log dir shares its filesystem, else nothing (a full
// log disk elsewhere cannot touch the metadata).
func (s *Server) spaceCheck(n *node) (func(int64) error, error) {
	if n.emb == nil || s.cfg.EtcdReserveBytes == 0 {
		return nil, nil
	}
	same, err := sameFilesystem(s.cfg.LogDirs[0], n.emb.Dir())
	if err != nil || !same {
		return nil, err
	}
	return n.emb.AllowWrite, nil
}

// openStore connects to etcd and loads the metadata: the one place the
// etcd implementation is chosen; every part depends on the metadata roles
// it uses. While etcd is unavailable it waits (n.wait).
func (s *Server) openStore(ctx context.Context, n *node) error {
	ctx, cancel := n.wait.bound(ctx)
	defer cancel()
	err := n.wait.retry(ctx, func(ctx context.Context) error {
		store, err := etcdstore.Open(ctx, n.endpoints, s.cfg.EtcdPrefix, s.log, etcdOptions(s.cfg.EtcdClient)...)
		if err == nil {
			n.store = store
		}
		return err
	})
	if err == nil {
		n.wait.ready("metadata loaded")
	}
	return err
}

// etcdOptions are the client security of an external etcd
// (metadata.etcd.tls.*, metadata.etcd.username and password).
func etcdOptions(c config.EtcdClient) []etcdstore.Option {
	var opts []etcdstore.Option
	if c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" {
		opts = append(opts, etcdstore.WithTLSFiles(c.CAFile, c.CertFile, c.KeyFile))
	}
	if c.Username != "" {
		opts = append(opts, etcdstore.WithAuth(c.Username, c.Password))
	}
	return opts
}

// register records this broker in etcd under a lease (membership), waiting
// while etcd is unavailable (n.wait) and while an earlier incarnation's
// lease (after a crash) has not yet expired.
func (s *Server) register(ctx context.Context, n *node) error {
	ttl := time.Duration(s.cfg.BrokerSessionTimeoutMs) * time.Millisecond
	m := newMembership(n.store, n.self, ttl, s.log)
	ctx, cancel := n.wait.bound(ctx)
	defer cancel()
	reg, err := m.register(ctx, n.wait.waiting)
	if err != nil {
		return err
	}
	n.wait.ready("registered")
	m.reg, n.reg = reg, m
	return nil
}

// httpStopTimeout bounds how long a stopping broker waits for an HTTP
// listener's (metrics, console) requests, whose contexts it cancelled, to
// end.
const httpStopTimeout = 5 * time.Second

// serveMetrics serves Prometheus metrics at metrics.listener/metrics, the
// admin endpoints (admin.go) and the health endpoints (health.go) beside
// them, and Go's profiles at
// /debug/pprof/ (the listener is loopback by default, like the admin
// endpoints, which have no authentication either) until ctx ends. Then
// the requests still running have their context cancelled and are
// awaited. A failing listener is logged; the broker goes on without it.
func (s *Server) serveMetrics(ctx context.Context, n *node) {
	if n.metricsLn == nil {
		return
	}
	adm := &admin{cfg: n.live, store: n.store, cache: n.store.Cache(), parts: n.parts, tier: n.tier, log: s.log}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.metrics, promhttp.HandlerOpts{}))
	adm.mount(mux)
	(&health{nodeID: s.cfg.NodeID, reg: n.reg, cache: n.store.Cache(), parts: n.parts}).mount(mux)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s.serveHTTP(ctx, n.metricsLn, metricsAuth(s.cfg.Metrics, mux), "metrics server")
}

// serveHTTP serves h on ln until ctx ends or serving fails (logged as
// name's error). Then it cancels the context of the requests still
// running (ending long-lived ones such as live tails), waits up to
// httpStopTimeout for them, closes what is left and returns once the
// server is done with ln.
func (s *Server) serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, name string) {
	reqCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return reqCtx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		s.log.Error(name, "err", err)
		served = nil
	}
	cancelRequests()
	sctx, cancel := context.WithTimeout(context.Background(), httpStopTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn(name+": requests still running after the stop timeout", "err", err)
		_ = srv.Close()
	}
	if served != nil {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn(name, "err", err)
		}
	}
}
