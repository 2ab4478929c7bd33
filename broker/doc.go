// Package broker is Strata's composition root: Server locks its log
// directory, starts the metadata store (embedded etcd or an external
// cluster), registers this broker under a lease, opens the partitions it
// serves, and runs the parts around them — the controller campaign
// (metadata/controller), follower fetchers (replica), the group
// coordinator (group), retention and cleaning (compaction) and the remote
// log manager (tier/remote) — while serving the Kafka protocol on its
// listener and, on metrics.listener, Prometheus metrics (/metrics) and
// the tier admin endpoints of `strata tier` (admin.go: GET /v1/tier/status,
// POST /v1/tier/restore and /v1/tier/start), and on console.listener the
// web console (broker/console, wired in consoleserve.go).
//
// # Listeners
//
// The broker binds every named listener (config.Broker.KafkaListeners:
// listeners, listener.security.protocol.map, advertised.listeners) and
// runs one accept loop per listener; the loops share the connection
// limits and request memory. An SSL listener wraps each connection in TLS
// (broker/security: PEM stores reloaded when their files change) and
// names the connection's principal from the client certificate; the
// handshake must finish within connections.max.idle.ms, and a failed one
// is logged and closes the connection. Each connection's listener and
// principal travel with its requests (handler.Conn): Metadata,
// FindCoordinator and DescribeCluster answer with the brokers' endpoints
// of that listener. The registration publishes one endpoint per
// advertised listener (metadata.Broker.Endpoints), Host and Port being
// the inter-broker listener's; other brokers reach this one there
// (peer.Transport: the follower fetchers, forwarded requests and
// transaction markers), over TLS with the inter-broker listener's ssl.*
// settings when it is SSL or SASL_SSL.
//
// # SASL
//
// A SASL_PLAINTEXT or SASL_SSL listener (after TLS, for SASL_SSL)
// authenticates each connection as Kafka's SaslServerAuthenticator does
// (auth.go, handler.Auth): the mechanisms of its sasl.enabled.mechanisms
// (broker/sasl) are built at bind time — PLAIN's users from the
// listener's <mechanism>.sasl.jaas.config, SCRAM's credentials read at
// each exchange from the metadata cache (AlterUserScramCredentials writes
// them to the store), OAUTHBEARER's keys from
// sasl.oauthbearer.jwks.endpoint.url. Before a connection has
// authenticated only ApiVersions, SaslHandshake and SaslAuthenticate are
// served; any other request closes it (logged). A v0 SaslHandshake is
// followed by bare tokens (kafka-python 2.0), which the connection loop
// hands to the exchange itself. A failed exchange is answered
// SASL_AUTHENTICATION_FAILED after connection.failed.authentication.delay.ms,
// logged (rate limited, with the user and remote address), counted in
// strata_failed_authentication_total{listener} and closes the connection.
// On success the connection's principal becomes User:<name>. With
// connections.max.reauth.ms (or an OAUTHBEARER token's exp) the session
// has a lifetime, sent in SaslAuthenticate v1+; a connection whose
// session ended may only re-authenticate (KIP-368: the same mechanism and
// principal) and is closed at any other request. The SASL state belongs
// to the connection's reading goroutine: the gate runs there, and the two
// SASL handlers run inline. The inter-broker listener's SASL client side
// is sasl.mechanism.inter.broker.protocol with the username and password
// of that listener's JAAS configuration (peer.Transport).
//
// server.go is the only file that knows the metadata store is etcd
// (metadata/etcdstore); it hands every part the narrow metadata roles
// that part uses (handler.Store, controller.Store, the tier's
// RemoteSegments and DeletedTopics, the shutdown's Registration), so each
// also runs on metadata/memstore in tests. test/arch enforces this.
//
// One writer of partition state: leaders are elected only by the
// controller (metadata/controller), through its fenced term — on a
// broker's loss, its controlled shutdown, ElectLeaders (other brokers
// forward the request to the controller over broker/peer) and the
// preferred-leader rebalance; the only other write is a leader's ISR
// change (broker/partition), by compare-and-set on the partition epoch.
//
// # Lifecycle
//
// Run starts the broker's parts from one declared list (components.go),
// in order, and stops the started ones in reverse (lifecycle.go). Each
// part may have a start, a run loop (own goroutine and context, cancelled
// at the part's turn to stop) and a stop. The order:
//
//	start ↓                     stop ↑ (reverse)
//	kafka listener              bind every listener first, TLS stores loaded: a bad address or key store fails before anything starts
//	metrics listener            bind
//	console listener            bind (console.listener; empty: none)
//	log dir                     lock; released last
//	embedded etcd               single-node mode only, in metadata.etcd.dir
//	metadata store              waits for etcd (logged, bounded); closed after everything that uses it
//	dynamic config              dynamic broker configs applied, then followed
//	registration                the lease, renewed if lost; revoked after the logs are flushed
//	metadata space guard        embedded etcd's disk reserve and quota; after the lease (see etcdstore)
//	partition manager           logs on the embedded etcd's disk leave its reserve
//	remote tier                 chunk cache dropped after the logs closed
//	partitions                  open the logs; flushed with a clean-shutdown marker
//	replica fetcher             stops before the logs close
//	partition sync              metadata → partitions, ISR shrink, HW checkpoints
//	group coordinator           closes before the logs close
//	controller                  campaign; steps down at stop
//	controller observer
//	log cleaner                 retention and compaction
//	remote tier tasks           copies, remote expiry, deleted topics' sweep
//	metrics server              /metrics, admin endpoints, pprof
//	console server              the web console (broker/console); pages wait for the handlers' Env
//	peer client                 connections to other brokers (forwarding to the controller)
//	transaction coordinator     transactions on __transaction_state; markers through the peers
//	authorizer                  ACLs from the metadata cache (authorizer.class.name; none: all allowed)
//	kafka server                accepts clients only now; at stop, connections drain
//	controlled shutdown         runs first at stop, while the broker still serves
//
// A step that fails to start stops the steps before it, and Run returns
// an error naming it; nothing is left running or open. Stopping (ctx done,
// e.g. SIGTERM) and a failure of a running part (the broker id taken by
// another live process, the Kafka listener failing to accept) go through
// the same ordered stop; a failure is Run's error. The controlled shutdown
// stops following, flags the registration as shutting down and waits
// (bounded) until the controller has moved the partitions this broker
// leads to live ISR members (shutdown.go); without a registration it is
// skipped, as the controller already moves them. When serving ends the
// group coordinator resigns at once, so requests waiting on a rebalance
// answer NOT_COORDINATOR instead of holding the connections' drain.
//
// # Metadata outages
//
// etcd out of reach — stopped, paused, without quorum, or cut off from
// this broker — does not stop the broker; it behaves as a Kafka broker
// does when ZooKeeper or the KRaft controller quorum is out of reach:
//
//   - At start-up it waits for etcd before it accepts any client (the
//     listener is bound, nothing is accepted), logging that it waits, for
//     up to initial.broker.registration.timeout.ms (KRaft's setting),
//     then fails the start (a non-zero exit) (metadatawait.go).
//   - Running, it serves on from its metadata cache, which keeps the last
//     state etcd gave: fetches, metadata, and produce to the partitions it
//     leads. The store logs the outage once, with progress every 10 s (how
//     long, and until when the lease holds or since when it may have
//     expired) and its end (metadata/etcdstore).
//   - The lease survives an outage shorter than broker.session.timeout.ms,
//     and often a longer one (a restarted or re-elected etcd leader
//     extends every lease): keep-alives are retried, and the registration
//     counts as lost only when etcd answers that the lease is gone. Then
//     the broker registers again under a new lease, serving meanwhile, as
//     Kafka's ZooKeeper-mode broker re-creates /brokers/ids/N after a
//     session expiry (registration.go). Only its id held by another live
//     process past the grace of a lease stops it (a non-zero exit).
//   - Resync is the ordinary path: the cache re-lists or resumes its watch,
//     and the partitions apply the states it shows. If the controller
//     moved a leadership while this broker was away (its lease expired),
//     the new state carries a higher leader epoch; the broker becomes a
//     follower and truncates its log to where the new leader's epoch
//     began, as after any leader change.
//
// Produce while the lease may have expired follows Kafka, which never
// fences a partition leader for lost contact with its metadata quorum
// (a KRaft broker whose heartbeats fail only retries them; the controller
// fences it in its own records and elects other leaders, and the broker
// learns of that only when it reads the metadata again). Fencing comes
// from replication instead: an acks=all write is acknowledged only once
// every ISR member fetched it — the new leader, elected from that ISR,
// among them — and once the new leader stops fetching from the deposed
// one, the deposed leader's high watermark stalls, so nothing it takes
// afterwards is acknowledged; its ISR cannot shrink to let it proceed
// alone either, since that is a compare-and-set on the partition epoch
// the controller bumped. acks=1 and acks=0 writes a deposed leader took are truncated
// when it learns of the new epoch: the loss Kafka documents for acks=1
// when a leader fails. Refusing produce once the lease may have expired
// would not make acks=1 safe (a leader cut off from etcd cannot know when
// the controller acts) and would turn every etcd outage, during which no
// leader can change at all, into an outage of writes.
//
// # Dynamic configuration
//
// Keys marked dynamic in the config table (Kafka's dynamic broker
// configs) change at run time: AlterConfigs and IncrementalAlterConfigs
// on a broker resource store them in the metadata store (the cluster
// default, or one broker's own), and every broker applies them live, with
// one mechanism (config.Live, see package config): the "dynamic config"
// step builds the effective configuration before any part starts, and its
// run loop is the one goroutine that recomputes it from the metadata cache
// and publishes it. Parts read it where they need fresh values (handlers,
// the topics' resolved configs) and the parts that hold state made from
// it follow its changes in their own loops: partition sync re-resolves
// every topic's configs (log.* defaults, message.max.bytes,
// min.insync.replicas...), the log cleaner replaces its threads
// (log.cleaner.*), the replica fetcher re-spreads its partitions
// (num.replica.fetchers), and the accept loop's quotas take the new
// connection limits (max.connections*). The controller resolves
// unclean.leader.election.enable from the same cache itself.
//
// A partition that cannot open at start-up is logged, counted
// (strata_partition_open_errors_total) and stays offline on this broker
// (strata_offline_replicas) while the others are served; every metadata
// change retries it, and stray directories are not removed after such a
// sync, so its data stays. The same holds for the partitions beyond the
// broker's partition limit (partition.Budget: max.broker.partitions,
// capped by what the open-file limit leaves room for), which the
// registration publishes so that topic creation refuses placements past
// it: a broker restarted with more partitions than its descriptors allow
// serves as many as fit, rather than running out of files.
//
// A request's path: conn.go reads a frame (wire), finds the API in the
// handler table, runs the handler, and queues the encoded response; a
// writer goroutine per connection writes responses strictly in request
// order, with record bytes sent from segment files by sendfile.
//
// # Connections
//
// No client can stop the broker by what it sends or by how many connect
// (accept.go, connquota.go, reqmem.go, connlog.go). Run raises the soft
// limit of open files to the hard limit. The accept loops wait while
// max.connections are open (counted over all listeners; with several,
// the inter-broker listener's connections count but do not wait, as in
// Kafka), close a connection from an address that has
// max.connections.per.ip open, and retries accept failures that pass
// (EMFILE and its kin) after a pause of 5 ms doubling to 1 s. A
// connection idle for connections.max.idle.ms is closed; a request must
// arrive whole within it of its first byte, and a response be taken by
// the client within it. A frame's buffer grows
// as its bytes arrive; the bytes of the requests being read or handled
// count against queued.max.request.bytes, where reading pauses (past a
// request's first 64 KiB, except for the request that began first).
// Connections' warnings pass a shared rate limit.
//
// Concurrency: Run's goroutine starts and stops the parts; each part's
// run loop has one goroutine of its own (it may start more, and joins
// them before it returns), and a part's stop runs only after its loop
// returned. node's fields are written by the start steps, before the
// steps that read them begin. Per connection, one reading goroutine
// decodes requests and runs handlers in order (so a producer's pipelined
// batches append in order); long-polling handlers (Fetch) run on their
// own goroutine; one writing goroutine waits on each queued response in
// turn. A panic in a handler closes only its connection. Server-wide state lives in
// handler.Env and is safe for concurrent use. What connections share
// (clients: their quotas, request memory and log limit) is guarded by
// its own locks and atomics; a connection's read deadline is set by its
// reading goroutine and moved earlier by its drain, under readDeadline's
// lock.
//
// Lock order (whole broker): partition.Manager.mu → partition.Partition.roleMu
// → partition.Partition.mu → local.Log's lock → segment locks; a consumer
// group's lock comes before roleMu (its appends). The metadata cache's lock
// is a leaf.
package broker
