// Package console serves Strata's built-in web console on
// console.listener: server-rendered html/template pages with htmx
// (vendored, embedded with go:embed; no Node build, no CDN) and live
// views over server-sent events.
//
// Its one job is rendering. The data comes from inside the broker: the
// metadata cache, the partition manager, the group coordinator and the
// tier, through the handlers themselves, run in process with a
// handler.Conn that carries the console user's principal, so the
// broker's authorizer decides what each page shows and each action may
// do, as for a Kafka client. What only another broker knows (its
// effective config, the groups it coordinates, the records of the
// partitions it leads) is asked of it over the inter-broker peer client.
// The console never opens a Kafka connection to its own broker.
//
// Access: console.read.only (default true) refuses every state change.
// With a SASL listener, the console asks for a login checked against the
// broker's SCRAM credentials (the stored salt, iterations and StoredKey)
// and uses "User:<name>" as the principal; without one, every visitor is
// User:ANONYMOUS. Every state-changing form carries a CSRF token bound to
// the session. No secret is rendered: sensitive config values are
// redacted.
//
// Concurrency: Server is an http.Handler; each request runs on its own
// goroutine. Sessions are kept in memory behind a mutex. Live tails poll
// the partition's log end (bounded in time) and stream new records as
// SSE events. Two views are gathered from every broker and shared by all
// users' pages, each in a ttlCache: the consumer lag index (every
// coordinator's committed offsets and the partitions' high watermarks)
// and the tier view (every broker's DescribeLogDirs with Strata's tier
// tag: replica sizes and tier state). The first request waits for the
// first gather; after that, past the time to live, a page gets the held
// view while one background goroutine gathers the next, bounded by
// peerWait and ended by Close. Each page shows only what its user may
// describe.
package console
