// Package config is Strata's configuration: a broker's static settings
// read from a Kafka-style .properties file plus `--set key=value`
// overrides, and the per-topic settings (Kafka's topic-level keys) that
// sit on top of the broker's log.* defaults.
//
// Key names and defaults are Kafka's where Kafka has the key; Strata's own
// keys (metadata.etcd.*, metrics.listener, log.level,
// remote.log.storage.backend and remote.log.storage.{local,s3}.*) follow
// the same style. Each key is defined once, in a table (keys.go for the
// broker, topic.go for topics) that holds its name, DescribeConfigs type,
// default, doc line and a binder that parses, validates and stores the
// value; parsing, defaults, Raw, Source and the Describe* answers are all
// derived from those two tables. Adding a key is adding one row (and a
// field). A key Kafka has that Strata does not act on is marked compat in
// its row: it is accepted, validated and reported, so Kafka configurations
// load unchanged, and its doc says so. Every other key must reach code
// that reads its field (TestEveryKeyIsWired walks both tables).
//
// Keys whose Kafka default is null fall back to others as in Kafka:
// log.dirs → log.dir; advertised.listeners → listeners;
// inter.broker.listener.name → security.inter.broker.protocol (the
// listener of that name); log.roll.ms →
// log.roll.hours; log.retention.ms → log.retention.minutes →
// log.retention.hours (any negative result means unlimited, -1); an unset
// log.flush.interval.ms is -1 (never flush on a timer); metadata.etcd.dir
// and remote.log.storage.local.dir default to directories under the
// first log dir.
//
// Listeners are named (listeners=NAME://host:port, mapped to a security
// protocol by listener.security.protocol.map; a bare host:port is
// PLAINTEXT) and checked as Kafka checks them (KafkaListeners). The ssl.*
// keys may also be set per listener as listener.name.<lower-case
// name>.ssl.*, outside the table: they are accepted for ssl.* keys only,
// parsed with the same binders (SSLFor), reported in Raw and
// DescribeBroker, and hidden where the key they override is sensitive
// (IsSensitive). ParsePrincipalRules is ssl.principal.mapping.rules
// (Kafka's SslPrincipalMapper).
//
// Errors are *KeyError values that name the key and unwrap to
// ErrUnknownKey or ErrInvalidValue; the broker maps both to INVALID_CONFIG
// for topic configs and refuses to start on them for broker configs.
//
// # Dynamic broker configs
//
// Keys marked dynamic in the table (Kafka's dynamic broker configs, for
// the keys Strata has) may also be set at run time, as Kafka's
// AlterConfigs and IncrementalAlterConfigs do on a broker resource: for
// the whole cluster (the <default> entity) or for one broker. They are
// stored in the metadata store. A broker's effective configuration is its
// static one overlaid by the cluster default and then by its own dynamic
// configs (per-broker dynamic > cluster-default dynamic > static >
// built-in default), built by WithDynamic with the same table and
// cross-key rules as at start-up; Source and the Describe* answers report
// each value's layer and its synonyms. Only the primary key of a group of
// synonyms is dynamic (log.retention.ms, not .minutes or .hours), so a
// dynamic value always takes precedence over its static fallbacks. A key
// is marked dynamic only when the broker applies a new value live:
// topic defaults (log.*, message.max.bytes, min.insync.replicas, ...)
// through the topics' resolved configs, the others by the part that uses
// them.
//
// The mechanism is one atomic pointer, Live: one goroutine (Live.Follow)
// follows the metadata cache, recomputes the effective configuration with
// Effective (which leaves out, and reports, stored entries that no longer
// apply) and publishes it; readers Load it where they need fresh values,
// and parts that hold state made from it (cleaner threads, fetch loops,
// connection limits, partitions' resolved topic configs) follow
// Live.Changed and rebuild that state, as they follow the metadata cache.
//
// The package depends on the standard library only, so every layer may
// import it. Concurrency: a *Broker is built once and never modified
// afterwards, so it may be read from any number of goroutines (a dynamic
// change builds a new one); Topic is a plain value. Live is safe for
// concurrent use. The tables are package-level and read-only after init.
package config
