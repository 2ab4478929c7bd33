// Package broker is Strata's composition root: Server locks its log
// directory, starts the metadata store (embedded etcd or an external
// cluster), registers this broker under a lease, opens the partitions it
// serves, and runs the parts around them — the controller campaign
// (metadata/controller), follower fetchers (replica), the group
// coordinator (group), retention and cleaning (compaction) and the remote
// log manager (tier/remote) — while serving the Kafka protocol on its
// listener and, on metrics.listener, Prometheus metrics (/metrics) and
// the tier admin endpoints of `strata tier` (admin.go: GET /v1/tier/status,
// POST /v1/tier/restore and /v1/tier/start).
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
// Stopping (ctx done, e.g. SIGTERM) is a controlled shutdown: the broker
// stops following, flags its registration as shutting down and waits
// (bounded) until the controller has moved the partitions it leads to
// live ISR members (shutdown.go), then closes connections, flushes its
// logs with a clean-shutdown marker and revokes its lease.
//
// A request's path: conn.go reads a frame (wire), finds the API in the
// handler table, runs the handler, and queues the encoded response; a
// writer goroutine per connection writes responses strictly in request
// order, with record bytes sent from segment files by sendfile.
//
// Concurrency: per connection, one reading goroutine decodes requests and
// runs handlers in order (so a producer's pipelined batches append in
// order); long-polling handlers (Fetch) run on their own goroutine; one
// writing goroutine waits on each queued response in turn. A panic in a
// handler closes only its connection. Server-wide state lives in
// handler.Env and is safe for concurrent use.
//
// Lock order (whole broker): partition.Manager.mu → partition.Partition.roleMu
// → partition.Partition.mu → local.Log's lock → segment locks; a consumer
// group's lock comes before roleMu (its appends). The metadata cache's lock
// is a leaf.
package broker
