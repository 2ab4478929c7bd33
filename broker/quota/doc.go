// Package quota enforces Kafka's client quotas on one broker: it measures
// each client's byte rates (producer_byte_rate, consumer_byte_rate), its
// share of request handling time (request_percentage) and each address's
// connection rate (connection_creation_rate) against the quotas stored in
// the metadata store, and says how long a client over its quota is
// throttled.
//
// # Semantics (Kafka's ClientQuotaManager)
//
// Rates are measured over quota.window.num samples of
// quota.window.size.seconds each: a sample takes records until its window
// has passed, then the oldest is reused; samples older than all the
// windows count nothing; the rate is the samples' total over the time
// from the oldest sample's start, but over at least num-1 whole windows
// (so one burst on a fresh sensor does not read as a huge rate). After a
// record lifts the rate above the quota, the client is throttled for
//
//	(rate - quota) / quota × window
//
// milliseconds, window being the measured span: the time after which the
// rate over that span falls back to the quota if the client sends nothing.
// Request-time and connection throttles are capped at one window and
// num windows respectively, as in Kafka.
//
// A quota is resolved per key for a (user, client id) pair in Kafka's
// precedence: user and client id; user and the default client id; user;
// the default user and client id; the default user and the default client
// id; the default user; client id; the default client id. Clients sharing
// the resolved entity share its measurement: a quota on user alice holds
// all of alice's clients together, one on the default user holds each
// user apart. An ip's connection quota is the ip's own, else the default
// ip's.
//
// # Concurrency
//
// A Manager is safe for concurrent use; one mutex guards its sensors.
// It reads quotas from the metadata cache, which the store's watch keeps
// current, so a change applies to the next record.
package quota
