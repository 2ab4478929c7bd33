package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/peer"
	"github.com/strata-broker/strata/broker/replica"
	"github.com/strata-broker/strata/compaction"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
	"github.com/strata-broker/strata/metadata/etcdstore"
)

// Server is one Strata broker.
type Server struct {
	cfg *config.Broker
	log *slog.Logger

	ready chan struct{}
	mu    sync.Mutex
	addr  string

	env *handler.Env
	reg *prometheus.Registry
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

// Addr is the address the Kafka listener is bound to ("" before Run
// began listening).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Ready is closed once the broker listens and has loaded its metadata and
// partitions.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run serves until ctx is done, then shuts down cleanly: connections are
// closed, logs flushed with a clean-shutdown marker, the broker's lease
// revoked and the metadata store closed.
func (s *Server) Run(ctx context.Context) (err error) {
	ln, err := net.Listen("tcp", s.cfg.Listeners[0])
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listeners[0], err)
	}
	defer ln.Close()
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.mu.Unlock()

	var cleanups []func() error
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			if cerr := cleanups[i](); cerr != nil {
				s.log.Error("shutdown step failed", "err", cerr)
				err = errors.Join(err, cerr)
			}
		}
	}()

	ld, err := openLogDir(s.cfg.LogDirs[0], s.cfg.NodeID)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, ld.close)

	endpoints := s.cfg.EtcdEndpoints
	if len(endpoints) == 0 {
		emb, err := etcdstore.StartEmbedded(filepath.Join(s.cfg.LogDirs[0], "etcd"), s.log)
		if err != nil {
			return fmt.Errorf("start embedded etcd: %w", err)
		}
		cleanups = append(cleanups, func() error { emb.Close(); return nil })
		endpoints = emb.Endpoints()
	}
	// The one place the etcd implementation is chosen; every part below
	// depends on the metadata roles it uses.
	var store metadata.Store
	store, err = etcdstore.Open(ctx, endpoints, s.cfg.EtcdPrefix, s.log)
	if err != nil {
		return fmt.Errorf("open metadata store: %w", err)
	}
	cleanups = append(cleanups, store.Close)

	self := handler.SelfBroker(s.cfg, s.addr)
	self.Incarnation = ld.incarnation
	reg, err := s.register(ctx, store, self)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, reg.Close)

	parts, err := partition.NewManager(s.cfg, store.Cache(), s.log)
	if err != nil {
		return err
	}
	tier, err := s.openTiering(ctx, store, parts)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, tier.Close)
	fetchCtx, stopFetching := context.WithCancel(context.Background())
	fetcher := replica.New(fetchCtx, replica.Options{
		NodeID: s.cfg.NodeID, Cache: store.Cache(), MaxWait: time.Duration(s.cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
		PartitionMaxBytes: s.cfg.ReplicaFetchMaxBytes, ResponseMaxBytes: s.cfg.ReplicaFetchResponseMaxBytes,
		Fetchers: s.cfg.NumReplicaFetchers, Log: s.log,
	})
	parts.SetReplication(store, fetcher)
	if err := parts.Sync(); err != nil {
		s.log.Error("open partitions", "err", err)
	} else if err := parts.RemoveStray(); err != nil {
		s.log.Error("remove stray partitions", "err", err)
	}
	cleanups = append(cleanups, parts.Close, func() error { stopFetching(); return fetcher.Close() })
	groups := group.New(group.ConfigFrom(s.cfg), s.log)
	cleanups = append(cleanups, groups.Close) // runs before parts.Close

	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.reg.MustRegister(newPartitionCollector(parts), tier.collector(parts))
	peers := peer.NewClient(store.Cache())
	cleanups = append(cleanups, peers.Close)
	s.env = &handler.Env{Cfg: s.cfg, Store: store, Cache: store.Cache(), Partitions: parts, Groups: groups, Peers: peers, Log: s.log, Metrics: handler.NewMetrics(s.reg), Self: self}

	// Stopping (ctx done) first moves leaderships away while still serving.
	stopping := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	s.env.Draining = ctx.Done()
	// Group requests waiting on a rebalance get NOT_COORDINATOR when
	// serving ends, as from a coordinator that resigned, rather than
	// holding the connections' drain.
	stopGroups := context.AfterFunc(ctx, func() { _ = groups.Close() })
	defer stopGroups()
	var wg sync.WaitGroup
	wg.Go(func() {
		s.stopWhenDone(stopping, ctx, cancel, reg, store.Cache(), func() { fetcher.Follow(nil); parts.SetReplication(store, nil) })
	})
	wg.Go(func() { parts.Run(ctx) })
	ctrl := controller.New(store, s.cfg.NodeID, controller.OptionsFromConfig(s.cfg, s.log))
	s.env.Elector = ctrl
	wg.Go(func() {
		if err := ctrl.Run(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("controller stopped", "err", err)
		}
	})
	wg.Go(func() { ctrl.RunReassignments(ctx) })
	s.env.Controller = controller.Observe(ctx, store)
	wg.Go(func() { compaction.New(s.cfg, compaction.SourceOf(parts.All), s.log).Run(ctx) })
	wg.Go(func() { groups.Run(ctx, s.cfg.NodeID, store.Cache(), parts) })
	wg.Go(func() { tier.Run(ctx) })
	if s.cfg.MetricsListener != "" {
		stop, err := s.serveMetrics(&admin{cfg: s.cfg, store: store, cache: store.Cache(), parts: parts, tier: tier, log: s.log})
		if err != nil {
			return err
		}
		cleanups = append(cleanups, stop)
	}
	go func() {
		select {
		case <-reg.Lost():
			s.log.Error("broker registration lease lost; shutting down")
			cancel()
		case <-ctx.Done():
		}
	}()

	s.log.Info("strata broker serving", "node.id", s.cfg.NodeID, "listener", s.addr, "advertised", self.Addr(), "etcd", endpoints, "cluster.id", store.ClusterID())
	close(s.ready)
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("accept", "err", err)
				cancel()
			}
			break
		}
		wg.Go(func() { s.serveConn(ctx, c) })
	}
	wg.Wait()
	s.log.Info("strata broker stopping")
	return nil
}

// register records this broker in etcd under a lease, retrying while an
// earlier incarnation's lease (after a crash) has not yet expired.
func (s *Server) register(ctx context.Context, store metadata.Brokers, self metadata.Broker) (metadata.Registration, error) {
	ttl := time.Duration(s.cfg.BrokerSessionTimeoutMs) * time.Millisecond
	deadline := time.Now().Add(2*ttl + 5*time.Second)
	for {
		reg, err := store.RegisterBroker(ctx, self, ttl)
		if err == nil {
			return reg, nil
		}
		if !errors.Is(err, metadata.ErrBrokerRegistered) || time.Now().After(deadline) {
			return nil, fmt.Errorf("register broker %d: %w", self.ID, err)
		}
		s.log.Info("broker id still registered by an earlier process; waiting for its lease to expire", "node.id", self.ID)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// serveMetrics serves Prometheus metrics at metrics.listener/metrics, the
// admin endpoints (admin.go) beside them, and Go's profiles at
// /debug/pprof/ (the listener is loopback by default, like the admin
// endpoints, which have no authentication either).
func (s *Server) serveMetrics(adm *admin) (func() error, error) {
	ln, err := net.Listen("tcp", s.cfg.MetricsListener)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", s.cfg.MetricsListener, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	adm.mount(mux)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics server", "err", err)
		}
	}()
	return srv.Close, nil
}
