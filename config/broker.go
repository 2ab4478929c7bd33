package config

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// RackAwareReplicaSelector is the replica.selector.class value (Kafka's
// class name) that lets consumers fetch from an in-sync replica in their
// own rack (KIP-392).
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// Broker is a broker's whole configuration: its static one, built with
// Load, Parse or Default, and, from WithDynamic or Effective, the dynamic
// configs over it. It is not changed afterwards, so one *Broker may be
// shared by every goroutine. Field comments give the Kafka key and default.
type Broker struct {
	NodeID              int32    // node.id (1)
	Rack                string   // broker.rack ("")
	Listeners           []string // listeners, canonical NAME://host:port ("PLAINTEXT://127.0.0.1:9092")
	AdvertisedListeners []string // advertised.listeners, canonical NAME://host:port (default: Listeners)
	// ListenerSecurityProtocolMap is listener.security.protocol.map
	// (Kafka's default: each protocol's name to itself).
	ListenerSecurityProtocolMap map[string]string
	// InterBrokerListenerName is inter.broker.listener.name, else the
	// listener named after security.inter.broker.protocol (PLAINTEXT).
	InterBrokerListenerName string
	// KafkaListeners are the listeners with their protocols and advertised
	// addresses, in the order of listeners.
	KafkaListeners []Listener
	// SSL is the ssl.* keys; SSLFor applies a listener's overrides.
	SSL SSL
	// SASL is the sasl.* keys; SASLFor applies a listener's overrides.
	SASL                     SASL
	LogDirs                  []string // log.dirs, else log.dir ("/tmp/strata-logs")
	NumPartitions            int32    // num.partitions (1)
	DefaultReplicationFactor int16    // default.replication.factor (1)
	MaxBrokerPartitions      int32    // max.broker.partitions (MaxInt32; capped by the open-file limit at start)
	AutoCreateTopics         bool     // auto.create.topics.enable (true)
	MessageMaxBytes          int32    // message.max.bytes (1048588): largest record batch
	SocketRequestMaxBytes    int32    // socket.request.max.bytes (104857600): largest request frame
	MinInsyncReplicas        int32    // min.insync.replicas (1)
	CompressionType          string   // compression.type ("producer")
	BrokerSessionTimeoutMs   int64    // broker.session.timeout.ms (9000): lease TTL of the broker registration
	// InitialBrokerRegistrationTimeoutMs is
	// initial.broker.registration.timeout.ms (60000): how long start-up
	// waits for etcd before the broker exits with an error.
	InitialBrokerRegistrationTimeoutMs int64

	// Authorizer is authorizer.class.name, super.users and
	// allow.everyone.if.no.acl.found.
	Authorizer Authorizer

	MaxConnections      int32 // max.connections (MaxInt32): accepting waits while this many are open
	MaxConnectionsPerIP int32 // max.connections.per.ip (MaxInt32): more from one address are closed at once
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides
	// (""): per host name or address, its own max.connections.per.ip.
	MaxConnectionsPerIPOverrides map[string]int32
	ConnectionsMaxIdleMs         int64 // connections.max.idle.ms (600000; negative: none)
	// ConnectionsMaxReauthMs is connections.max.reauth.ms (0: SASL
	// sessions do not expire).
	ConnectionsMaxReauthMs int64
	// ConnectionFailedAuthenticationDelayMs is
	// connection.failed.authentication.delay.ms (100).
	ConnectionFailedAuthenticationDelayMs int32
	QuotaWindowNum                        int32 // quota.window.num (11): samples a client quota's rate is measured over
	QuotaWindowSizeSeconds                int32 // quota.window.size.seconds (1): span of each sample
	QueuedMaxRequestBytes                 int64 // queued.max.request.bytes (268435456 here, -1 in Kafka; <= 0: unbounded)

	// ReplicaSelectorClass is replica.selector.class (unset: consumers
	// fetch from the leader; RackAwareReplicaSelector: from an in-sync
	// replica in their rack, KIP-392).
	ReplicaSelectorClass  string
	ReplicaLagTimeMaxMs   int64 // replica.lag.time.max.ms (30000)
	ReplicaFetchWaitMaxMs int64 // replica.fetch.wait.max.ms (500)
	// ReplicaFetchMaxBytes is replica.fetch.max.bytes (1048576): what a
	// follower asks per partition and fetch.
	ReplicaFetchMaxBytes int32
	// ReplicaFetchResponseMaxBytes is replica.fetch.response.max.bytes
	// (10485760): what a follower asks per fetch.
	ReplicaFetchResponseMaxBytes int32
	// NumReplicaFetchers is num.replica.fetchers (1): fetch loops per
	// leader broker, each replicating its share of the partitions.
	NumReplicaFetchers int32
	// MaxIncrementalFetchSessionCacheSlots is
	// max.incremental.fetch.session.cache.slots (1000): fetch sessions
	// (KIP-227) the broker keeps, consumers' and followers'.
	MaxIncrementalFetchSessionCacheSlots int32
	// ReplicaHighWatermarkCheckpointIntervalMs is
	// replica.high.watermark.checkpoint.interval.ms (5000).
	ReplicaHighWatermarkCheckpointIntervalMs int64
	UncleanLeaderElectionEnable              bool // unclean.leader.election.enable (false)
	AutoLeaderRebalanceEnable                bool // auto.leader.rebalance.enable (true)

	LeaderImbalanceCheckIntervalSeconds int64 // leader.imbalance.check.interval.seconds (300)
	LeaderImbalancePerBrokerPercentage  int32 // leader.imbalance.per.broker.percentage (10)

	EtcdEndpoints []string   // metadata.etcd.endpoints (empty: run an embedded etcd under the first log dir)
	EtcdPrefix    string     // metadata.etcd.prefix ("/strata")
	EtcdClient    EtcdClient // metadata.etcd.tls.*, username and password: the client security of an external etcd
	// The embedded etcd's data directory, backend quota and the free space
	// kept for it on its disk: metadata.etcd.dir (default: <first log
	// dir>/etcd), metadata.etcd.quota.backend.bytes (2 GiB, etcd's) and
	// metadata.etcd.reserve.bytes (128 MiB; 0: no guard).
	EtcdDir               string
	EtcdQuotaBackendBytes int64
	EtcdReserveBytes      int64

	MetricsListener string     // metrics.listener ("127.0.0.1:9644"; "" disables the Prometheus endpoint)
	LogLevel        slog.Level // log.level (info)
	// Metrics is the metrics.listener endpoint's protocol, TLS settings
	// and credentials.
	Metrics Metrics

	LogSegmentBytes                    int64  // log.segment.bytes (1073741824, at least 14)
	LogRollMs                          int64  // log.roll.ms, else log.roll.hours (168h)
	LogRollJitterMs                    int64  // log.roll.jitter.ms, else log.roll.jitter.hours (0)
	LogIndexIntervalBytes              int32  // log.index.interval.bytes (4096)
	LogPageCacheWindowBytes            int64  // log.page.cache.window.bytes (0: off)
	ReplicaPageCacheWindowBytes        int64  // replica.page.cache.window.bytes (0: off)
	LogIndexSizeMaxBytes               int32  // log.index.size.max.bytes (10485760)
	LogSegmentOpenFilesMax             int32  // log.segment.open.files.max (0: a quarter of RLIMIT_NOFILE)
	LogFlushIntervalMessages           int64  // log.flush.interval.messages (MaxInt64: never)
	LogFlushIntervalMs                 int64  // log.flush.interval.ms (unset: -1, never flush on time)
	LogRetentionMs                     int64  // log.retention.ms, else .minutes, else .hours (168h); -1 unlimited
	LogRetentionBytes                  int64  // log.retention.bytes (-1 unlimited)
	LogRetentionCheckIntervalMs        int64  // log.retention.check.interval.ms (300000)
	LogCleanupPolicy                   string // log.cleanup.policy ("delete")
	LogMessageTimestampType            string // log.message.timestamp.type ("CreateTime")
	LogMessageTimestampDifferenceMaxMs int64  // log.message.timestamp.difference.max.ms (MaxInt64)
	LogMessageTimestampBeforeMaxMs     int64  // log.message.timestamp.before.max.ms (MaxInt64)
	LogMessageTimestampAfterMaxMs      int64  // log.message.timestamp.after.max.ms (MaxInt64)
	LogPreallocate                     bool   // log.preallocate (false)
	LogSegmentDeleteDelayMs            int64  // log.segment.delete.delay.ms (60000)
	LogLocalRetentionMs                int64  // log.local.retention.ms (-2: follow retention)
	LogLocalRetentionBytes             int64  // log.local.retention.bytes (-2: follow retention)

	LogCleanerEnable              bool    // log.cleaner.enable (true)
	LogCleanerThreads             int32   // log.cleaner.threads (1)
	LogCleanerBackoffMs           int64   // log.cleaner.backoff.ms (15000)
	LogCleanerDedupeBufferSize    int64   // log.cleaner.dedupe.buffer.size (134217728)
	LogCleanerIOMaxBytesPerSecond float64 // log.cleaner.io.max.bytes.per.second (unlimited)
	LogCleanerDeleteRetentionMs   int64   // log.cleaner.delete.retention.ms (86400000)
	LogCleanerMinCompactionLagMs  int64   // log.cleaner.min.compaction.lag.ms (0)
	LogCleanerMaxCompactionLagMs  int64   // log.cleaner.max.compaction.lag.ms (MaxInt64)
	LogCleanerMinCleanableRatio   float64 // log.cleaner.min.cleanable.ratio (0.5)

	RemoteLogStorageSystemEnable   bool     // remote.log.storage.system.enable (false)
	RemoteLogStorageBackend        string   // remote.log.storage.backend ("local" or "s3")
	RemoteLogStorageLocalDir       string   // remote.log.storage.local.dir (default: <first log dir>/tier-store)
	RemoteLogStorageS3             S3Config // remote.log.storage.s3.*
	RemoteLogManagerTaskIntervalMs int64    // remote.log.manager.task.interval.ms (30000)
	RemoteLogReaderThreads         int32    // remote.log.reader.threads (10)
	RemoteLogReaderCacheBytes      int64    // remote.log.reader.cache.bytes (268435456)
	RemoteLogReaderMemoryBytes     int64    // remote.log.reader.memory.bytes (67108864)

	GroupInitialRebalanceDelayMs    int64 // group.initial.rebalance.delay.ms (3000)
	GroupMinSessionTimeoutMs        int64 // group.min.session.timeout.ms (6000)
	GroupMaxSessionTimeoutMs        int64 // group.max.session.timeout.ms (1800000)
	GroupMaxSize                    int32 // group.max.size (MaxInt32)
	OffsetsTopicNumPartitions       int32 // offsets.topic.num.partitions (50)
	OffsetsTopicReplicationFactor   int16 // offsets.topic.replication.factor (1 here, 3 in Kafka; clamped to the live brokers)
	OffsetsTopicSegmentBytes        int32 // offsets.topic.segment.bytes (104857600)
	OffsetsRetentionMinutes         int64 // offsets.retention.minutes (10080)
	OffsetsRetentionCheckIntervalMs int64 // offsets.retention.check.interval.ms (600000)
	OffsetMetadataMaxBytes          int32 // offset.metadata.max.bytes (4096)
	OffsetsCommitTimeoutMs          int64 // offsets.commit.timeout.ms (5000)

	GroupConsumerSessionTimeoutMs    int64 // group.consumer.session.timeout.ms (45000)
	GroupConsumerHeartbeatIntervalMs int64 // group.consumer.heartbeat.interval.ms (5000)

	TransactionStateLogNumPartitions                     int32 // transaction.state.log.num.partitions (50)
	TransactionStateLogReplicationFactor                 int16 // transaction.state.log.replication.factor (3; clamped to the live brokers)
	TransactionStateLogMinISR                            int32 // transaction.state.log.min.isr (2)
	TransactionStateLogSegmentBytes                      int32 // transaction.state.log.segment.bytes (104857600)
	TransactionMaxTimeoutMs                              int64 // transaction.max.timeout.ms (900000)
	TransactionAbortTimedOutTransactionCleanupIntervalMs int64 // transaction.abort.timed.out.transaction.cleanup.interval.ms (10000)
	TransactionalIDExpirationMs                          int64 // transactional.id.expiration.ms (604800000)
	ProducerIDExpirationMs                               int64 // producer.id.expiration.ms (86400000)
	TransactionPartitionVerificationEnable               bool  // transaction.partition.verification.enable (true)
	AddPartitionsToTxnRetryBackoffMs                     int64 // add.partitions.to.txn.retry.backoff.ms (20)
	AddPartitionsToTxnRetryBackoffMaxMs                  int64 // add.partitions.to.txn.retry.backoff.max.ms (100)

	// Raw holds every effective key's value in canonical text form,
	// defaults included (keys whose Kafka default is null and that are
	// not derived, such as log.retention.minutes, appear only when set),
	// and the listener.name.<name>.ssl.* keys set, as written.
	// Sensitive values are present; redact them before printing.
	Raw map[string]string

	// Keys whose effective value is computed from other keys.
	securityInterBrokerProtocol string
	listenerSSL                 map[string]SSL  // by lower-case listener name: SSL with its listener.name.<l>.ssl.* keys
	listenerSASL                map[string]SASL // likewise for sasl.* and <mechanism>.sasl.jaas.config
	metricsSSL                  *SSL            // SSL with the metrics.listener.ssl.* keys (a pointer: SSL's fields are read as Broker.SSL's)
	logDir                      string
	logRollHours                int64
	logRollJitterHours          int64
	logRetentionMinutes         int64
	logRetentionHours           int64

	// The layers of explicitly set keys, as written: static (the file
	// and --set), then the dynamic cluster default and this broker's
	// dynamic configs (WithDynamic); set is all three merged, later
	// layers winning, and is what the values are parsed from.
	static, dynDefault, dynBroker, set map[string]string
}

// S3Config configures the S3 backend of the tier (remote.log.storage.s3.*).
// Empty keys fall back to the standard AWS environment and credential chain.
type S3Config struct {
	Bucket    string // bucket
	Prefix    string // prefix of every object key
	Endpoint  string // endpoint URL, e.g. http://127.0.0.1:9000 for MinIO
	Region    string // region ("us-east-1")
	AccessKey string // access.key (sensitive)
	SecretKey string // secret.key (sensitive)
	PathStyle bool   // path.style addressing (true for MinIO)
}

// Kafka's DescribeConfigs config sources, used by Source and Entry.Source.
const (
	SourceUnknown              int8 = 0
	SourceDynamicTopic         int8 = 1 // a topic override
	SourceDynamicBroker        int8 = 2 // this broker's dynamic config
	SourceDynamicDefaultBroker int8 = 3 // the cluster-wide dynamic default
	SourceStaticBroker         int8 = 4 // set in the properties file or with --set
	SourceDefault              int8 = 5 // built-in default
)

// Default returns the configuration with every key at its default.
func Default() *Broker {
	b, err := Parse(nil)
	if err != nil { // the table's defaults are checked by the tests
		panic(fmt.Sprintf("config: built-in defaults are invalid: %v", err))
	}
	return b
}

// Load reads the properties file at path (none when path is "") and then
// applies overrides, each "key=value" as given to `strata serve --set`.
// Later settings win. Errors name the offending key and where it was set.
func Load(path string, overrides []string) (*Broker, error) {
	static := map[string]string{}
	origin := map[string]string{}
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		props, err := readProperties(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("config: %s: %w", path, err)
		}
		for _, p := range props {
			static[p.key] = p.value
			origin[p.key] = fmt.Sprintf("%s:%d", filepath.Base(path), p.line)
		}
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("config: --set %q: want key=value", o)
		}
		static[k] = strings.TrimSpace(v)
		origin[k] = "--set"
	}
	b, err := Parse(static)
	if ke, ok := err.(*KeyError); ok && ke.Origin == "" {
		ke.Origin = origin[ke.Key]
	}
	return b, err
}

// Parse builds a configuration from explicitly set keys (values are
// trimmed); every other key takes its default.
func Parse(static map[string]string) (*Broker, error) {
	st, err := trimmed(static)
	if err != nil {
		return nil, err
	}
	return build(st, nil, nil)
}

// trimmed copies m with its values trimmed; it fails on the
// alphabetically first unknown key, so the error is deterministic.
func trimmed(m map[string]string) (map[string]string, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(m))
	for _, k := range keys {
		if _, ok := brokerIndex[k]; !ok && !isListenerKey(k) {
			return nil, unknownKey(k, brokerNames)
		}
		out[k] = strings.TrimSpace(m[k])
	}
	return out, nil
}

// build parses the layers of set keys (known keys, trimmed values; the
// dynamic ones may be nil) over the defaults and checks the cross-key
// rules.
func build(static, dynDefault, dynBroker map[string]string) (*Broker, error) {
	b := &Broker{static: static, dynDefault: dynDefault, dynBroker: dynBroker,
		set: make(map[string]string, len(static)+len(dynDefault)+len(dynBroker))}
	for _, layer := range []map[string]string{static, dynDefault, dynBroker} {
		maps.Copy(b.set, layer)
	}
	for _, d := range brokerKeys {
		v, set := b.set[d.name]
		if !set {
			if d.kind != keyDefault {
				continue
			}
			v = d.def
		}
		if err := d.f.set(b, v); err != nil {
			return nil, invalid(d.name, err)
		}
	}
	if err := b.derive(); err != nil {
		return nil, err
	}
	b.Raw = make(map[string]string, len(brokerKeys))
	for _, d := range brokerKeys {
		if _, set := b.set[d.name]; set || d.kind != keyOptional {
			b.Raw[d.name] = d.f.get(b)
		}
	}
	maps.Copy(b.Raw, b.ListenerOverrides())
	return b, nil
}

// Source reports where key's value comes from: the layer that set it
// (SourceDynamicBroker, SourceDynamicDefaultBroker, SourceStaticBroker,
// in that order of precedence), SourceDefault when none did, and
// SourceUnknown for a key that is not a broker key.
func (b *Broker) Source(key string) int8 {
	if _, ok := brokerIndex[key]; !ok && !isListenerKey(key) {
		return SourceUnknown
	}
	for _, l := range b.layers() {
		if _, ok := l.m[key]; ok {
			return l.source
		}
	}
	return SourceDefault
}

// layer is one layer of explicitly set keys and the source it reports.
type layer struct {
	m      map[string]string
	source int8
}

// layers lists the set layers by precedence, highest first.
func (b *Broker) layers() []layer {
	return []layer{{b.dynBroker, SourceDynamicBroker}, {b.dynDefault, SourceDynamicDefaultBroker}, {b.static, SourceStaticBroker}}
}

func (b *Broker) isSet(key string) bool {
	_, ok := b.set[key]
	return ok
}

const (
	minuteMs = int64(60 * 1000)
	hourMs   = 60 * minuteMs
)

// derive fills the keys whose Kafka default is null from the keys they
// fall back to, and checks rules that span several keys.
func (b *Broker) derive() error {
	if !b.isSet("log.dirs") {
		b.LogDirs = []string{b.logDir}
	}
	if len(b.LogDirs) == 0 {
		return invalid("log.dirs", fmt.Errorf("must name at least one directory"))
	}
	if err := b.deriveListeners(); err != nil {
		return err
	}
	if err := b.deriveListenerSSL(); err != nil {
		return err
	}
	if err := b.deriveMetrics(); err != nil {
		return err
	}
	if err := b.checkSASL(); err != nil {
		return err
	}
	if err := b.checkEtcdClient(); err != nil {
		return err
	}
	if b.ReplicaFetchWaitMaxMs > b.ReplicaLagTimeMaxMs { // as Kafka requires
		return invalid("replica.fetch.wait.max.ms", fmt.Errorf("%d exceeds replica.lag.time.max.ms (%d)", b.ReplicaFetchWaitMaxMs, b.ReplicaLagTimeMaxMs))
	}
	if b.MaxConnectionsPerIP == 0 && len(b.MaxConnectionsPerIPOverrides) == 0 { // as Kafka requires
		return invalid("max.connections.per.ip", fmt.Errorf("can be set to zero only if max.connections.per.ip.overrides is set"))
	}
	if !b.isSet("log.roll.ms") {
		b.LogRollMs = b.logRollHours * hourMs
	}
	if !b.isSet("log.roll.jitter.ms") {
		b.LogRollJitterMs = b.logRollJitterHours * hourMs
	}
	if !b.isSet("log.flush.interval.ms") {
		b.LogFlushIntervalMs = -1
	}
	switch {
	case b.isSet("log.retention.ms"):
	case b.isSet("log.retention.minutes"):
		b.LogRetentionMs = b.logRetentionMinutes * minuteMs
	default:
		b.LogRetentionMs = b.logRetentionHours * hourMs
	}
	if b.LogRetentionMs < 0 { // Kafka: any negative retention means unlimited
		b.LogRetentionMs = -1
	}
	if !b.isSet("metadata.etcd.dir") {
		b.EtcdDir = filepath.Join(b.LogDirs[0], "etcd")
	}
	if !b.isSet("remote.log.storage.local.dir") {
		b.RemoteLogStorageLocalDir = filepath.Join(b.LogDirs[0], "tier-store")
	}
	if b.GroupMinSessionTimeoutMs > b.GroupMaxSessionTimeoutMs {
		return invalid("group.min.session.timeout.ms", fmt.Errorf("%d exceeds group.max.session.timeout.ms %d",
			b.GroupMinSessionTimeoutMs, b.GroupMaxSessionTimeoutMs))
	}
	if b.RemoteLogStorageSystemEnable {
		if b.RemoteLogStorageBackend == "s3" && b.RemoteLogStorageS3.Bucket == "" {
			return invalid("remote.log.storage.s3.bucket", fmt.Errorf("must be set when remote.log.storage.backend is s3"))
		}
		// Kafka checks the broker-wide local retention only when tiering is on.
		if err := checkLocalRetention("log.local.retention.ms", "log.retention.ms", b.LogLocalRetentionMs, b.LogRetentionMs); err != nil {
			return err
		}
		if err := checkLocalRetention("log.local.retention.bytes", "log.retention.bytes", b.LogLocalRetentionBytes, b.LogRetentionBytes); err != nil {
			return err
		}
	}
	return nil
}

// checkLocalRetention is Kafka's rule for local.retention.* against
// retention.*: when total retention is bounded and local retention is not
// -2 (follow the total), local must be bounded too and not exceed it.
func checkLocalRetention(localKey, totalKey string, local, total int64) error {
	if total == -1 || local == -2 {
		return nil
	}
	if local == -1 {
		return invalid(localKey, fmt.Errorf("must not be -1 (unlimited) while %s is %d", totalKey, total))
	}
	if local > total {
		return invalid(localKey, fmt.Errorf("%d must not be more than %s %d", local, totalKey, total))
	}
	return nil
}
