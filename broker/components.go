package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/strata-broker/strata/broker/acl"
	"github.com/strata-broker/strata/broker/fetchsession"
	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/peer"
	"github.com/strata-broker/strata/broker/producerid"
	"github.com/strata-broker/strata/broker/replica"
	"github.com/strata-broker/strata/broker/security"
	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/broker/txnmarkers"
	"github.com/strata-broker/strata/compaction"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
)

// node holds the parts of one Run of the broker, filled in as they start
// (components): a step uses only what the steps before it set.
type node struct {
	kafkaLns  []*kafkaListener // in the order of listeners
	metricsLn net.Listener
	consoleLn net.Listener      // console.listener; nil: the console is off
	peerTLS   *security.Client  // the inter-broker listener's TLS client side; nil: plaintext
	peerSASL  kgosasl.Mechanism // the inter-broker listener's SASL client side; nil: none

	logDir    *logDir
	emb       embeddedSpace // the embedded etcd's space guard; nil with an external etcd
	closeEtcd func()        // stops the embedded etcd; nil with an external one
	endpoints []string
	store     metadata.Store
	wait      *metadataWait // start-up's wait for etcd
	live      *config.Live  // the effective configuration: static, then the dynamic broker configs
	self      metadata.Broker
	reg       *membership

	parts        *partition.Manager
	tier         *tiering
	fetcher      *replica.Fetcher
	stopFetching context.CancelFunc
	groups       *group.Coordinator
	ctrl         *controller.Controller
	observer     *controller.Observer
	stopObserver context.CancelFunc
	peers        *peer.Client
	txn          *txn.Coordinator
	markers      *txnmarkers.Writer
	pids         *producerid.Allocator
	acl          *acl.Authorizer             // authorizer.class.name's authorizer; nil: none
	env          atomic.Pointer[handler.Env] // the handlers' Env, once the Kafka server started
	draining     chan struct{}               // the Env's Draining, closed when serving ends
	clients      *clients                    // the Kafka listener's connection limits, request memory and log limit

	metrics        *prometheus.Registry
	handlerMetrics *handler.Metrics
	openErrors     prometheus.Counter // partitions that failed to open at start-up
}

func newNode() *node {
	n := &node{metrics: prometheus.NewRegistry()}
	n.openErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "strata_partition_open_errors_total",
		Help: "Partitions this broker failed to open at start-up (each is logged); strata_offline_replicas counts those still not open.",
	})
	n.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), n.openErrors)
	n.handlerMetrics = handler.NewMetrics(n.metrics)
	return n
}

// components is the broker's parts in start order; they stop in the
// reverse order. So: listeners bind before anything starts and Kafka
// clients are accepted only once every other part runs; on stopping, the
// controlled shutdown runs while the broker still serves, then serving
// ends, the transaction and group coordinators close, the loops stop,
// the fetchers stop, the logs are flushed, and only then the lease is
// revoked and the metadata store, etcd and the log directory's lock are
// released.
func (s *Server) components(n *node) []component {
	return []component{
		// Both listeners bind first, so a bad or taken address fails the
		// start before anything runs. The kernel queues connections until
		// "kafka server" accepts them.
		{name: "kafka listener", start: func(context.Context) error { return s.listenKafka(n) }, stop: func() error {
			var errs []error
			for _, kl := range n.kafkaLns {
				errs = append(errs, closeListener(&kl.ln)())
			}
			return errors.Join(errs...)
		}},
		{name: "metrics listener", start: func(context.Context) error { return s.listenMetrics(n) }, stop: closeListener(&n.metricsLn)},
		{name: "console listener", start: func(context.Context) error { return s.listenConsole(n) }, stop: closeListener(&n.consoleLn)},
		// The log directory's lock, released last.
		{name: "log dir", start: func(context.Context) error {
			ld, err := openLogDir(s.cfg.LogDirs[0], s.cfg.NodeID)
			n.logDir = ld
			return err
		}, stop: func() error { return n.logDir.close() }},
		// Single-node mode: etcd in this process, in metadata.etcd.dir
		// (under the log dir by default).
		{name: "embedded etcd", start: func(context.Context) error { return s.startEtcd(n) }, stop: func() error {
			if n.closeEtcd != nil {
				n.closeEtcd()
			}
			return nil
		}},
		// Loads the metadata, waiting (logged, bounded by
		// initial.broker.registration.timeout.ms) while etcd is
		// unavailable; Kafka clients are not accepted before it is loaded.
		{name: "metadata store", start: func(ctx context.Context) error {
			n.wait = &metadataWait{log: s.log, timeout: time.Duration(s.cfg.InitialBrokerRegistrationTimeoutMs) * time.Millisecond}
			return s.openStore(ctx, n)
		}, stop: func() error { return n.store.Close() }},
		// The dynamic broker configs over the static ones: applied before
		// any part starts, then followed; each part that holds state made
		// from them follows n.live in turn.
		{name: "dynamic config", start: func(context.Context) error {
			n.live = config.NewLive(s.cfg)
			for _, err := range n.live.Refresh(n.store.Cache(), s.cfg.NodeID) {
				s.log.Error("dynamic broker config not applied", "err", err)
			}
			if def, own := n.live.Load().DynamicConfigs(); len(def)+len(own) > 0 {
				s.log.Info("dynamic broker configs applied", "cluster_default", def, "broker", own)
			}
			return nil
		}, run: func(ctx context.Context, _ func(error)) { n.live.Follow(ctx, n.store.Cache(), s.cfg.NodeID, s.log) }},
		// The broker's lease. It is revoked only after the logs were
		// flushed: the broker counts as live until then. A lease lost
		// (etcd out of reach for longer than its TTL) is replaced by a
		// new registration while the broker goes on serving; only its id
		// taken by another live process stops the broker (registration.go).
		{name: "registration", start: func(ctx context.Context) error {
			n.self = handler.SelfBroker(s.cfg, n.boundAddrs())
			n.self.Incarnation = n.logDir.incarnation
			n.self.MaxPartitions = s.partitionBudget().MaxPartitions
			return s.register(ctx, n)
		}, run: func(ctx context.Context, fail func(error)) { n.reg.run(ctx, fail) },
			stop: func() error { return n.reg.Close() }},
		// The embedded etcd's space guard: it raises etcd's NOSPACE alarm
		// while its disk is below the reserve, which refuses lease grants,
		// so it starts only once this broker holds its lease.
		{name: "metadata space guard", run: func(ctx context.Context, _ func(error)) {
			if n.emb != nil {
				n.emb.Guard(ctx)
			}
			<-ctx.Done()
		}},
		// No log is open yet; cold reads are wired in before any opens.
		// Appends to logs on the embedded etcd's disk leave its reserve.
		{name: "partition manager", start: func(context.Context) (err error) {
			n.parts, err = partition.NewManager(n.live, n.store.Cache(), s.log)
			if err != nil {
				return err
			}
			check, err := s.spaceCheck(n)
			if err != nil {
				return err
			}
			n.parts.SetSpaceCheck(check)
			n.metrics.MustRegister(newPartitionCollector(n.parts, n.store.Cache(), s.cfg.NodeID))
			n.metrics.MustRegister(newReplicationCollector(n.parts, n.store.Cache()), newLogDirCollector(s.cfg.LogDirs))
			return nil
		}},
		// The remote log manager; its stop drops the chunk cache, after
		// the logs closed.
		{name: "remote tier", start: func(ctx context.Context) (err error) {
			if n.tier, err = s.openTiering(ctx, n.store, n.parts); err == nil {
				n.metrics.MustRegister(n.tier.collector(n.parts))
			}
			return err
		}, stop: func() error { return n.tier.Close() }},
		// The logs this broker hosts; stopping flushes them with a
		// clean-shutdown marker. A partition that cannot open stays
		// offline here; the others are served.
		{name: "partitions", start: func(context.Context) error { s.openPartitions(n); return nil },
			stop: func() error { return n.parts.Close() }},
		// Follower fetchers; they stop before the logs close. Their count
		// (num.replica.fetchers) follows the configuration.
		{name: "replica fetcher", start: func(context.Context) error { s.startFetcher(n); return nil },
			run: func(ctx context.Context, _ func(error)) { followFetchers(ctx, n.live, n.fetcher) },
			stop: func() error {
				n.stopFetching()
				return n.fetcher.Close()
			}},
		// Applies metadata changes to the partitions, shrinks lagging
		// ISRs, checkpoints high watermarks.
		{name: "partition sync", run: func(ctx context.Context, _ func(error)) { n.parts.Run(ctx) }},
		// Groups on __consumer_offsets; closed before the logs close
		// (and already when serving ends, see serveKafka).
		{name: "group coordinator", start: func(context.Context) error {
			n.groups = group.New(group.ConfigFrom(s.cfg), s.log)
			n.metrics.MustRegister(newGroupCollector(n.groups, n.parts))
			return nil
		}, run: func(ctx context.Context, _ func(error)) {
			n.groups.Run(ctx, s.cfg.NodeID, n.store.Cache(), n.parts)
		}, stop: func() error { return n.groups.Close() }},
		// The controller campaign (and reassignments while elected); it
		// steps down when its context ends.
		{name: "controller", start: func(context.Context) error {
			n.ctrl = controller.New(n.store, s.cfg.NodeID, controller.OptionsFromConfig(s.cfg, s.log)) // resolves dynamic configs from the store itself
			return nil
		}, run: func(ctx context.Context, _ func(error)) { s.runController(ctx, n.ctrl) }},
		// Who the controller is, for Metadata and DescribeCluster.
		{name: "controller observer", start: func(context.Context) error {
			ctx, cancel := context.WithCancel(context.Background())
			n.observer, n.stopObserver = controller.Observe(ctx, n.store), cancel
			return nil
		}, stop: func() error {
			n.stopObserver()
			<-n.observer.Done()
			return nil
		}},
		// Retention and log cleaning.
		{name: "log cleaner", run: func(ctx context.Context, _ func(error)) {
			compaction.New(n.live, compaction.SourceOf(n.parts.All), s.log).Run(ctx)
		}},
		// Copies to and expiry in the remote tier, deleted topics' sweep.
		{name: "remote tier tasks", run: func(ctx context.Context, _ func(error)) { n.tier.Run(ctx) }},
		// /metrics, the admin endpoints and pprof on metrics.listener.
		{name: "metrics server", run: func(ctx context.Context, _ func(error)) { s.serveMetrics(ctx, n) }},
		// The web console on console.listener; its pages wait for the
		// handlers' Env, set once the Kafka server runs.
		{name: "console server", run: func(ctx context.Context, _ func(error)) { s.serveConsole(ctx, n) }},
		// Connections to other brokers, for requests forwarded to the
		// controller; closed once no handler runs.
		{name: "peer client", start: func(context.Context) error {
			// Half the idle limit: other brokers close a connection idle
			// for connections.max.idle.ms (the cluster's brokers share it).
			n.peers = peer.NewClient(n.store.Cache(), time.Duration(s.cfg.ConnectionsMaxIdleMs)*time.Millisecond/2, s.transport(n))
			return nil
		}, stop: func() error { return n.peers.Close() }},
		// Transactions on __transaction_state, followed like the groups;
		// their markers go through the peer client. Closed before the
		// peers and the logs (and already when serving ends).
		{name: "transaction coordinator", start: func(context.Context) error { s.startTxn(n); return nil },
			run: func(ctx context.Context, _ func(error)) { n.txn.Run(ctx, s.cfg.NodeID, n.store.Cache(), n.parts) },
			stop: func() error {
				err := n.txn.Close()
				n.markers.Close()
				return err
			}},
		// The ACL authorizer, when authorizer.class.name names one: it
		// indexes the ACLs of the metadata cache and follows them.
		{name: "authorizer", start: func(context.Context) error {
			if a := s.cfg.Authorizer; a.ClassName != "" {
				s.log.Info("authorizer on", "authorizer.class.name", a.ClassName, "super.users", a.SuperUsers, "allow.everyone.if.no.acl.found", a.AllowEveryoneIfNoACLFound)
				n.acl = acl.New(acl.Config{SuperUsers: a.SuperUsers, AllowEveryoneIfNoACLFound: a.AllowEveryoneIfNoACLFound}, n.store.Cache(), n.store, s.log.With("component", "authorizer"))
			}
			return nil
		}, run: func(ctx context.Context, _ func(error)) {
			if n.acl != nil {
				n.acl.Run(ctx)
			}
		}},
		// Kafka clients: accepted from here on, within the connection
		// limits; when this step stops, connections drain. An accept
		// failure that does not pass stops the broker.
		{name: "kafka server", start: func(ctx context.Context) (err error) {
			if n.clients, err = newClients(ctx, n.live.Load(), s.log); err != nil {
				return err
			}
			s.newEnv(n) // before Run reports ready: the console serves from it
			return nil
		}, run: func(ctx context.Context, fail func(error)) { s.serveKafka(ctx, fail, n) }},
		// Stopped first, while the broker still serves: leaderships move
		// to other ISR members (shutdown.go).
		{name: "controlled shutdown", stop: func() error { s.shutDownControlled(n); return nil }},
	}
}

// closeListener closes *ln if set; a listener already closed (its server
// closes it when it stops) is not an error.
func closeListener(ln *net.Listener) func() error {
	return func() error {
		if *ln == nil {
			return nil
		}
		if err := (*ln).Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	}
}

// listenKafka binds every listener, with its TLS settings loaded for the
// SSL ones, and loads the inter-broker listener's TLS client side.
func (s *Server) listenKafka(n *node) error {
	var failedAuth *prometheus.CounterVec
	for _, l := range s.cfg.KafkaListeners {
		kl := &kafkaListener{cfg: l}
		if l.SASL() {
			if failedAuth == nil {
				failedAuth = failedAuthMetric(n.metrics)
			}
			cache := func() *metadata.Cache {
				if n.store == nil {
					return nil
				}
				return n.store.Cache()
			}
			ls, err := newListenerSASL(s.cfg, l, cache, failedAuth.WithLabelValues(l.Name))
			if err != nil {
				return err
			}
			kl.sasl = ls
		}
		if l.TLS() {
			srv, err := security.NewServer(l.Name, s.cfg.SSLFor(l.Name), s.log)
			if err != nil {
				return err
			}
			kl.tls = srv
		}
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			return fmt.Errorf("listen on %s (listener %s): %w", l.Addr, l.Name, err)
		}
		kl.ln = ln
		n.kafkaLns = append(n.kafkaLns, kl)
	}
	if ib := s.cfg.InterBrokerListener(); ib.TLS() {
		c, err := security.NewClient(ib.Name, s.cfg.SSLFor(ib.Name), s.log)
		if err != nil {
			return fmt.Errorf("inter-broker listener: %w", err)
		}
		n.peerTLS = c
	}
	if s.cfg.InterBrokerListener().SASL() {
		m, err := interBrokerSASL(s.cfg)
		if err != nil {
			return err
		}
		n.peerSASL = m
	}
	s.mu.Lock()
	s.addr = n.kafkaLns[0].ln.Addr().String()
	s.addrs = n.boundAddrs()
	s.mu.Unlock()
	return nil
}

// transport is how this broker reaches the others: the inter-broker
// listener, with its TLS client side.
func (s *Server) transport(n *node) peer.Transport {
	t := peer.Transport{Listener: s.cfg.InterBrokerListenerName}
	if n.peerTLS != nil {
		t.TLS = n.peerTLS.Config
	}
	t.SASL = n.peerSASL
	return t
}

func (s *Server) listenMetrics(n *node) error {
	if s.cfg.MetricsListener == "" {
		return nil
	}
	var srv *security.Server
	if s.cfg.Metrics.SecurityProtocol == config.ProtocolSSL {
		var err error
		if srv, err = security.NewServer("metrics", s.cfg.MetricsSSL(), s.log); err != nil {
			return fmt.Errorf("metrics.listener TLS: %w", err)
		}
	}
	ln, err := net.Listen("tcp", s.cfg.MetricsListener)
	if err != nil {
		return fmt.Errorf("listen for metrics on %s: %w", s.cfg.MetricsListener, err)
	}
	if srv != nil {
		ln = tls.NewListener(ln, srv.Config())
	}
	n.metricsLn = ln
	return nil
}

// openPartitions opens the partitions the metadata assigns here. One that
// fails (a damaged log, a topic whose configs do not resolve) is logged,
// counted and left offline, as Kafka serves the logs it could load; every
// metadata change retries it (partition sync). Such failures are always
// partition- or topic-specific, so none stops the broker. Stray
// directories are removed only after a fully successful sync: a partition
// that failed to open is still assigned here and keeps its data.
func (s *Server) openPartitions(n *node) {
	if err := n.parts.Sync(); err != nil {
		n.openErrors.Add(float64(errorCount(err)))
		s.log.Error("open partitions: serving the others; these stay offline", "err", err)
		return
	}
	if err := n.parts.RemoveStray(); err != nil {
		s.log.Error("remove stray partitions", "err", err)
	}
}

// partitionBudget is the broker's share of its open-file limit (the
// partition manager computes the same from the same limit), logged with
// a warning where max.broker.partitions or log.segment.open.files.max ask
// for more than the limit has.
func (s *Server) partitionBudget() partition.Budget {
	b := partition.BudgetFor(s.cfg)
	s.log.Info("open-file budget", "budget", b.Describe())
	switch {
	case b.FilesAllow == 0:
		s.log.Warn("the open-file limit leaves no room for partitions: raise it (ulimit -n) or lower log.segment.open.files.max",
			"open_files", b.OpenFiles, "log.segment.open.files.max", b.SegmentFiles)
	case b.FilesAllow < s.cfg.MaxBrokerPartitions && s.cfg.Source("max.broker.partitions") == config.SourceStaticBroker:
		s.log.Warn("max.broker.partitions is more than the open-file limit leaves room for; the lower limit applies",
			"max.broker.partitions", s.cfg.MaxBrokerPartitions, "limit", b.MaxPartitions, "open_files", b.OpenFiles)
	}
	if b.OpenFiles > 0 && int64(s.cfg.MaxConnections) > b.Reserve && s.cfg.Source("max.connections") == config.SourceStaticBroker {
		s.log.Warn("max.connections is more than the open files left for connections; accepting waits when they run out",
			"max.connections", s.cfg.MaxConnections, "reserve", b.Reserve, "open_files", b.OpenFiles)
	}
	return b
}

// errorCount is how many errors err joins (1 for a plain error).
func errorCount(err error) int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return len(j.Unwrap())
	}
	return 1
}

// startFetcher connects the partitions to the follower fetcher and the
// metadata store (ISR changes) and starts following the partitions led
// elsewhere; partition sync, which starts next, re-hands the followed set
// at every metadata change.
func (s *Server) startFetcher(n *node) {
	ctx, cancel := context.WithCancel(context.Background())
	n.fetcher = replica.New(ctx, replica.Options{
		NodeID: s.cfg.NodeID, Cache: n.store.Cache(), MaxWait: time.Duration(s.cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
		PartitionMaxBytes: s.cfg.ReplicaFetchMaxBytes, ResponseMaxBytes: s.cfg.ReplicaFetchResponseMaxBytes,
		Fetchers: n.live.Load().NumReplicaFetchers, Transport: s.transport(n), Log: s.log,
	})
	n.stopFetching = cancel
	n.parts.SetReplication(n.store, n.fetcher)
	n.fetcher.Follow(n.parts.All())
}

// followFetchers applies changes of num.replica.fetchers until ctx ends.
func followFetchers(ctx context.Context, live *config.Live, f *replica.Fetcher) {
	for {
		ch := live.Changed()
		f.SetFetchers(live.Load().NumReplicaFetchers)
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// runController campaigns until ctx ends; a controller that stops early
// (its store closed) is logged, and the broker goes on serving.
func (s *Server) runController(ctx context.Context, ctrl *controller.Controller) {
	var wg sync.WaitGroup
	wg.Go(func() { ctrl.RunReassignments(ctx) })
	if err := ctrl.Run(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("controller stopped", "err", err)
	}
	wg.Wait()
}

// shutDownControlled stops following and runs the controlled shutdown
// (its registration's flag keeps leaders from taking it back into an ISR
// while its leaderships move away). Without a registration (lost, and its
// id taken) it does nothing: the controller already moves them.
func (s *Server) shutDownControlled(n *node) {
	select {
	case <-n.reg.Lost():
		s.log.Warn("controlled shutdown skipped: the broker is not registered")
		return
	default:
	}
	n.fetcher.Follow(nil)
	n.parts.SetReplication(n.store, nil)
	controlledShutdown(n.reg, n.store.Cache(), s.cfg.NodeID, s.log)
}

// serveKafka accepts Kafka connections until ctx ends, then drains them:
// the group and transaction coordinators resign at once (requests waiting on a rebalance
// answer NOT_COORDINATOR, as from a coordinator that moved, rather than
// hold the drain), and connections answer what they read and close
// (serveConn). Accepting waits while max.connections are open and
// retries failures that pass, such as running out of file descriptors
// (clients.accept); any other accept failure asks for the ordered stop,
// and connections already open are served until this step's turn to stop.
func (s *Server) serveKafka(ctx context.Context, fail func(error), n *node) {
	closed := make(chan struct{})
	context.AfterFunc(ctx, func() {
		close(n.draining)
		for _, kl := range n.kafkaLns {
			_ = kl.ln.Close()
		}
		close(closed)
	})
	var conns, accepting sync.WaitGroup
	conns.Go(func() { n.clients.quotas.follow(ctx, n.live, s.log) })
	for _, kl := range n.kafkaLns {
		accepting.Go(func() {
			for {
				c, err := n.clients.accept(ctx, kl.ln, n.protected(kl, s.cfg.InterBrokerListenerName))
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("accept on listener %s: %w", kl.cfg.Name, err))
					}
					return
				}
				conns.Go(func() { s.serveConn(ctx, c, n.clients, kl) })
			}
		})
	}
	accepting.Wait()
	<-closed // ctx ended
	_ = n.groups.Close()
	_ = n.txn.Close()
	conns.Wait()
}

// newEnv builds the handlers' Env, whose Draining closes when the Kafka
// server's turn to stop comes (serveKafka).
func (s *Server) newEnv(n *node) {
	sessions := fetchsession.New(int(s.cfg.MaxIncrementalFetchSessionCacheSlots), fetchsession.Shards, fetchsession.EvictAfter)
	registerSessionMetrics(n.metrics, sessions)
	n.draining = make(chan struct{})
	s.env = &handler.Env{
		Cfg: n.live, Store: n.store, Cache: n.store.Cache(), Partitions: n.parts, Groups: n.groups, Sessions: sessions,
		Txn: n.txn, ProducerIDs: n.pids,
		Controller: n.observer, Elector: n.ctrl, Peers: n.peers, Log: s.log, Metrics: n.handlerMetrics,
		Self: n.self, Draining: n.draining,
		Quotas: newQuotas(s.cfg, n.store.Cache(), n.metrics),
	}
	if n.acl != nil {
		s.env.Authorizer = n.acl
	}
	n.clients.rates = s.env.Quotas
	n.env.Store(s.env)
}

// registerSessionMetrics publishes the fetch session cache's gauges, as
// Kafka's NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached
// and IncrementalFetchSessionEvictionsPerSec.
func registerSessionMetrics(reg prometheus.Registerer, c *fetchsession.Cache) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_fetch_sessions", Help: "Incremental fetch sessions cached."},
			func() float64 { return float64(c.Sessions()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_fetch_session_partitions", Help: "Partitions cached over all incremental fetch sessions."},
			func() float64 { return float64(c.Partitions()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_fetch_session_evictions_total", Help: "Incremental fetch sessions evicted to make room for others."},
			func() float64 { return float64(c.Evictions()) }),
	)
}
