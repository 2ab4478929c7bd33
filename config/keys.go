package config

import (
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
)

// keyKind says how a key behaves when it is not set.
type keyKind int8

const (
	keyDefault  keyKind = iota // takes def
	keyDerived                 // Kafka's default is null; the value is computed from other keys (Broker.derive)
	keyOptional                // Kafka's default is null and nothing is derived: absent from Raw until set
)

// keyDef is one row of the broker key table: the single definition from
// which parsing, defaults, Raw, Source and DescribeBroker are derived.
type keyDef struct {
	name      string
	typ       int8 // Type* code for DescribeConfigs
	def       string
	kind      keyKind
	sensitive bool
	doc       string
	synonyms  []string // keys this one falls back to (DescribeTopic reports them as the source)
	// compat marks a key Kafka has that Strata accepts, validates and
	// reports but does not act on, so that Kafka configurations load
	// unchanged; its doc starts with compatDoc.
	compat bool
	// dynamic marks a key that may change at run time (Kafka's dynamic
	// broker configs, for the keys Strata has): IncrementalAlterConfigs
	// and AlterConfigs on a broker resource may set it, and the broker
	// applies the new value live (see the package doc).
	dynamic bool
	f       field[Broker]
}

// compatDoc opens the doc of every key marked compat.
const compatDoc = "Accepted for compatibility with Kafka; Strata does not act on it."

var maxLong = strconv.FormatInt(math.MaxInt64, 10)

// brokerKeys is the table of every broker key, grouped as in Kafka's docs.
var brokerKeys = []keyDef{
	// Identity and listeners.
	{name: "node.id", typ: TypeInt, def: "1", doc: "Unique id of this broker in the cluster.",
		f: intField(0, func(b *Broker) *int32 { return &b.NodeID })},
	{name: "broker.rack", typ: TypeString, def: "", doc: "Rack of the broker, used for rack-aware replica placement.",
		f: strField(func(b *Broker) *string { return &b.Rack }, nil)},
	{name: "listeners", typ: TypeString, def: "PLAINTEXT://127.0.0.1:9092", doc: "Comma-separated NAME://host:port listeners (empty host: all interfaces; port 0: any free port), each name unique and mapped to a security protocol by listener.security.protocol.map. A bare host:port is the PLAINTEXT listener.",
		f: listField(func(b *Broker) *[]string { return &b.Listeners }, listenerItem, nil)},
	{name: "advertised.listeners", typ: TypeString, kind: keyDerived, synonyms: []string{"listeners"}, doc: "NAME://host:port addresses published for each listener (in Metadata, to the clients of that listener, and to other brokers); defaults to listeners. A listener left out is not published.",
		f: alsoTargets(listField(func(b *Broker) *[]string { return &b.AdvertisedListeners }, listenerItem, nil), kafkaListeners)},
	{name: "listener.security.protocol.map", typ: TypeString, def: defaultProtocolMap, doc: "Map between listener names and security protocols (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), as NAME:PROTOCOL pairs. Each listener needs an entry. SASL_PLAINTEXT and SASL_SSL listeners authenticate with the mechanisms of sasl.enabled.mechanisms.",
		f: alsoTargets(protocolMapField(func(b *Broker) *map[string]string { return &b.ListenerSecurityProtocolMap }), kafkaListeners)},
	{name: "inter.broker.listener.name", typ: TypeString, kind: keyDerived, synonyms: []string{"security.inter.broker.protocol"}, doc: "Name of the listener brokers use between themselves (replication, forwarded requests, transaction markers): its advertised address and its TLS settings. It must be in advertised.listeners. Defaults to the listener named after security.inter.broker.protocol; only one of the two may be set.",
		f: strField(func(b *Broker) *string { return &b.InterBrokerListenerName }, nil)},
	{name: "security.inter.broker.protocol", typ: TypeString, def: ProtocolPlaintext, doc: "Security protocol between brokers: the inter-broker listener is the one of that name. Only one of this and inter.broker.listener.name may be set.",
		f: enumField(func(b *Broker) *string { return &b.securityInterBrokerProtocol }, securityProtocols...)},
	{name: "log.dir", typ: TypeString, def: "/tmp/strata-logs", doc: "Directory of the log data, used when log.dirs is not set.",
		f: strField(func(b *Broker) *string { return &b.logDir }, nonEmpty)},
	{name: "log.dirs", typ: TypeList, kind: keyDerived, synonyms: []string{"log.dir"}, doc: "Comma-separated directories of the log data (the embedded etcd, unless metadata.etcd.dir says otherwise, and the local tier live under the first); defaults to log.dir.",
		f: listField(func(b *Broker) *[]string { return &b.LogDirs }, nil, nil)},
	{name: "socket.request.max.bytes", typ: TypeInt, def: "104857600", doc: "Largest request frame accepted; larger frames close the connection.",
		f: intField(1, func(b *Broker) *int32 { return &b.SocketRequestMaxBytes })},
	// Client connections (Kafka's SocketServer keys).
	{name: "max.connections", dynamic: true, typ: TypeInt, def: strconv.Itoa(math.MaxInt32), doc: "The maximum number of connections we allow in the broker at any time. This limit is applied in addition to any per-ip limits configured using max.connections.per.ip. New connections are blocked (not accepted; the kernel queues them) while the limit is reached. Counted over all listeners. As in Kafka, connections on the inter-broker listener are accepted even at the limit when there are several listeners (with one, none is exempt); unlike Kafka, no connection of another listener is closed to make room.",
		f: intField(0, func(b *Broker) *int32 { return &b.MaxConnections })},
	{name: "max.connections.per.ip", dynamic: true, typ: TypeInt, def: strconv.Itoa(math.MaxInt32), doc: "The maximum number of connections we allow from each ip address. This can be set to 0 if there are overrides configured using max.connections.per.ip.overrides property. New connections from the ip address are dropped if the limit is reached.",
		f: intField(0, func(b *Broker) *int32 { return &b.MaxConnectionsPerIP })},
	{name: "max.connections.per.ip.overrides", dynamic: true, typ: TypeString, def: "", doc: "A comma-separated list of per-ip or hostname overrides to the default maximum number of connections. An example value is \"hostName:100,127.0.0.1:200\". A hostname is resolved when the broker starts; the override applies to each of its addresses.",
		f: connOverridesField(func(b *Broker) *map[string]int32 { return &b.MaxConnectionsPerIPOverrides })},
	{name: "connections.max.idle.ms", typ: TypeLong, def: "600000", doc: "Idle connections timeout: the server closes the connections that idle more than this (no request read or being answered, no bytes received). A request frame must also arrive whole within it of its first byte, and a response be taken by the client within it (at least half of it), so that a client that trickles a request or stops reading cannot hold a connection (Kafka counts idleness from the last bytes moved either way). Negative: no timeout.",
		f: intField(math.MinInt64, func(b *Broker) *int64 { return &b.ConnectionsMaxIdleMs })},
	{name: "queued.max.request.bytes", typ: TypeLong, def: "268435456", doc: "The number of queued bytes allowed before no more requests are read: the bytes of the requests all connections are reading or whose handling has not finished. At the limit, reading pauses beyond the first 64 KiB of a request (so small requests go on), except for the request that began first (so requests read part-way cannot wait on each other), until handled requests free their bytes. A paused request must still arrive whole within connections.max.idle.ms of its first byte. Kafka's default is -1 (unbounded); Strata bounds it, since a reading pause is cheaper than running out of memory. Zero or negative: unbounded.",
		f: intField(math.MinInt64, func(b *Broker) *int64 { return &b.QueuedMaxRequestBytes })},
	// Client quotas (Kafka's ClientQuotaManager keys).
	{name: "quota.window.num", typ: TypeInt, def: "11", doc: "The number of samples to retain in memory for client quotas.",
		f: intField(1, func(b *Broker) *int32 { return &b.QuotaWindowNum })},
	{name: "quota.window.size.seconds", typ: TypeInt, def: "1", doc: "The time span of each sample for client quotas.",
		f: intField(1, func(b *Broker) *int32 { return &b.QuotaWindowSizeSeconds })},
	{name: "broker.session.timeout.ms", typ: TypeInt, def: "9000", doc: "Lease TTL of the broker's registration in etcd; the broker is considered gone after it.",
		f: intField(1, func(b *Broker) *int64 { return &b.BrokerSessionTimeoutMs })},
	{name: "initial.broker.registration.timeout.ms", typ: TypeInt, def: "60000", doc: "How long a starting broker waits for etcd (to load the metadata and register) before it exits with an error; it logs while it waits and accepts no client meanwhile.",
		f: intField(1, func(b *Broker) *int64 { return &b.InitialBrokerRegistrationTimeoutMs })},

	// Topics and replication.
	{name: "num.partitions", typ: TypeInt, def: "1", doc: "Partitions of an auto-created topic or a CreateTopics request with -1.",
		f: intField(1, func(b *Broker) *int32 { return &b.NumPartitions })},
	{name: "default.replication.factor", typ: TypeInt, def: "1", doc: "Replication factor of an auto-created topic or a CreateTopics request with -1.",
		f: intField(1, func(b *Broker) *int16 { return &b.DefaultReplicationFactor })},
	{name: "max.broker.partitions", typ: TypeInt, def: "2147483647", doc: "Most partition replicas this broker hosts (the name KIP-578 proposed; Kafka has no such limit, this is Strata's own). The effective limit is the lower of this and what the broker's open-file limit (RLIMIT_NOFILE) leaves room for after a quarter of it for connections and log.segment.open.files.max for sealed segments, at two descriptors a partition; the broker publishes it in its registration. CreateTopics, CreatePartitions, auto-creation and reassignments that would put more replicas on a broker are refused (POLICY_VIOLATION, naming the limit), and a broker opens no more partitions than its limit: the rest stay offline.",
		f: intField(1, func(b *Broker) *int32 { return &b.MaxBrokerPartitions })},
	{name: "auto.create.topics.enable", typ: TypeBoolean, def: "true", doc: "Create a topic when Metadata or Produce names one that does not exist.",
		f: boolField(func(b *Broker) *bool { return &b.AutoCreateTopics })},
	{name: "message.max.bytes", dynamic: true, typ: TypeInt, def: "1048588", doc: "Largest record batch accepted (topic: max.message.bytes).",
		f: intField(0, func(b *Broker) *int32 { return &b.MessageMaxBytes })},
	{name: "min.insync.replicas", dynamic: true, typ: TypeInt, def: "1", doc: "Replicas that must acknowledge an acks=all produce.",
		f: intField(1, func(b *Broker) *int32 { return &b.MinInsyncReplicas })},
	{name: "compression.type", dynamic: true, typ: TypeString, def: "producer", compat: true, doc: compatDoc + " Kafka: codec of stored batches, producer keeping the producer's. Strata always stores batches as the producer sent them.",
		f: enumField(func(b *Broker) *string { return &b.CompressionType }, compressionTypes...)},
	{name: "replica.selector.class", typ: TypeString, kind: keyOptional, doc: "Which replica a consumer that names its rack (client.rack) fetches from (KIP-392): unset, the leader; " + RackAwareReplicaSelector + ", an in-sync replica in the consumer's rack.",
		f: strField(func(b *Broker) *string { return &b.ReplicaSelectorClass }, replicaSelector)},
	{name: "replica.lag.time.max.ms", typ: TypeLong, def: "30000", doc: "A follower that has not caught up for this long leaves the ISR.",
		f: intField(1, func(b *Broker) *int64 { return &b.ReplicaLagTimeMaxMs })},
	{name: "replica.fetch.wait.max.ms", typ: TypeInt, def: "500", doc: "How long a follower's fetch waits at the leader for new data; keep it below replica.lag.time.max.ms.",
		f: intField(1, func(b *Broker) *int64 { return &b.ReplicaFetchWaitMaxMs })},
	{name: "replica.fetch.max.bytes", typ: TypeInt, def: "1048576", doc: "Bytes a follower asks per partition in one fetch (the first batch comes whole even if larger).",
		f: intField(1, func(b *Broker) *int32 { return &b.ReplicaFetchMaxBytes })},
	{name: "replica.fetch.response.max.bytes", typ: TypeInt, def: "10485760", doc: "Bytes a follower asks for in one fetch, over all its partitions.",
		f: intField(1, func(b *Broker) *int32 { return &b.ReplicaFetchResponseMaxBytes })},
	{name: "num.replica.fetchers", dynamic: true, typ: TypeInt, def: "1", doc: "Fetch loops (connections) per leader broker; a follower's partitions of one leader are spread over them.",
		f: intField(1, func(b *Broker) *int32 { return &b.NumReplicaFetchers })},
	{name: "max.incremental.fetch.session.cache.slots", typ: TypeInt, def: "1000", doc: "The maximum number of total incremental fetch sessions that we will maintain. FetchSessionCache is sharded into 8 shards and the limit is equally divided among all shards. Sessions are allocated to each shard in round-robin. Only entries within a shard are considered eligible for eviction.",
		f: intField(0, func(b *Broker) *int32 { return &b.MaxIncrementalFetchSessionCacheSlots })},
	{name: "replica.high.watermark.checkpoint.interval.ms", typ: TypeLong, def: "5000", doc: "How often each partition's high watermark is written to disk (only when it moved).",
		f: intField(1, func(b *Broker) *int64 { return &b.ReplicaHighWatermarkCheckpointIntervalMs })},
	{name: "unclean.leader.election.enable", dynamic: true, typ: TypeBoolean, def: "false", doc: "Allow a replica outside the ISR to become leader (may lose data).",
		f: boolField(func(b *Broker) *bool { return &b.UncleanLeaderElectionEnable })},
	{name: "auto.leader.rebalance.enable", typ: TypeBoolean, def: "true", doc: "Move leadership back to preferred replicas in the background.",
		f: boolField(func(b *Broker) *bool { return &b.AutoLeaderRebalanceEnable })},
	{name: "leader.imbalance.check.interval.seconds", typ: TypeLong, def: "300", doc: "How often the controller checks for leaders away from their preferred replica.",
		f: intField(1, func(b *Broker) *int64 { return &b.LeaderImbalanceCheckIntervalSeconds })},
	{name: "leader.imbalance.per.broker.percentage", typ: TypeInt, def: "10", doc: "Share of a broker's preferred partitions led elsewhere that triggers a preferred-leader election.",
		f: intRange(1, 100, func(b *Broker) *int32 { return &b.LeaderImbalancePerBrokerPercentage })},

	// Metadata and observability (Strata keys).
	{name: "metadata.etcd.endpoints", typ: TypeList, def: "", doc: "Comma-separated etcd endpoints (host:port or http://host:port); empty runs an embedded etcd under the first log dir.",
		f: listField(func(b *Broker) *[]string { return &b.EtcdEndpoints }, endpoint, nil)},
	{name: "metadata.etcd.prefix", typ: TypeString, def: "/strata", doc: "Prefix of every etcd key of this cluster.",
		f: strField(func(b *Broker) *string { return &b.EtcdPrefix }, etcdPrefix)},
	{name: "metadata.etcd.tls.ca.file", typ: TypeString, kind: keyOptional, doc: "PEM file of the CA certificates that verify the external etcd's server certificate; setting any metadata.etcd.tls.* key makes the client use TLS (endpoints host:port or https://). Without it, the system roots verify etcd.",
		f: strField(func(b *Broker) *string { return &b.EtcdClient.CAFile }, nil)},
	{name: "metadata.etcd.tls.cert.file", typ: TypeString, kind: keyOptional, doc: "PEM file of the client certificate (chain, leaf first) the broker presents to an external etcd that requires one (etcd's --client-cert-auth); set with metadata.etcd.tls.key.file.",
		f: strField(func(b *Broker) *string { return &b.EtcdClient.CertFile }, nil)},
	{name: "metadata.etcd.tls.key.file", typ: TypeString, kind: keyOptional, doc: "PEM file of the private key of metadata.etcd.tls.cert.file.",
		f: strField(func(b *Broker) *string { return &b.EtcdClient.KeyFile }, nil)},
	{name: "metadata.etcd.username", typ: TypeString, kind: keyOptional, doc: "User the broker logs in as when the external etcd has authentication enabled (etcdctl auth enable); the user needs read and write access to metadata.etcd.prefix.",
		f: strField(func(b *Broker) *string { return &b.EtcdClient.Username }, nil)},
	{name: "metadata.etcd.password", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "Password of metadata.etcd.username.",
		f: strField(func(b *Broker) *string { return &b.EtcdClient.Password }, nil)},
	{name: "metadata.etcd.dir", typ: TypeString, kind: keyDerived, doc: "Data directory of the embedded etcd (etcd's --data-dir); defaults to <first log dir>/etcd. On a filesystem of its own, a full log disk cannot touch the metadata.",
		f: strField(func(b *Broker) *string { return &b.EtcdDir }, nonEmpty)},
	{name: "metadata.etcd.quota.backend.bytes", typ: TypeLong, def: "2147483648", doc: "Largest size of the embedded etcd's database (etcd's --quota-backend-bytes, its default 2 GiB). Past it etcd refuses writes that would grow it (its NOSPACE alarm): metadata writes fail with KAFKA_STORAGE_ERROR while reads and deletions work; the broker warns at 80%, and compacts, defragments and disarms the alarm once deletions brought the live data below 90%.",
		f: intField(1<<20, func(b *Broker) *int64 { return &b.EtcdQuotaBackendBytes })},
	{name: "metadata.etcd.reserve.bytes", typ: TypeLong, def: "134217728", doc: "Free space kept for the embedded etcd on the disk of metadata.etcd.dir (etcd exits when a write finds its disk full). While less is free, appends to logs on that disk fail with KAFKA_STORAGE_ERROR and etcd refuses writes that would grow it (its NOSPACE alarm); reads and deletions go on, so deleting topics or records frees space, and writes resume once the reserve is free again. The default covers one etcd WAL segment (64 MB) and a defragmentation of a small database; 0 disables the guard.",
		f: intField(0, func(b *Broker) *int64 { return &b.EtcdReserveBytes })},
	{name: "metrics.listener", typ: TypeString, def: "127.0.0.1:9644", doc: "host:port of the Prometheus /metrics endpoint; empty disables it.",
		f: strField(func(b *Broker) *string { return &b.MetricsListener }, optionalHostPort)},
	{name: "metrics.listener.security.protocol", typ: TypeString, def: ProtocolPlaintext, doc: "Protocol of the metrics.listener endpoint: PLAINTEXT (HTTP) or SSL (HTTPS, with the ssl.* keys overlaid by its own metrics.listener.ssl.* ones, such as metrics.listener.ssl.keystore.location; ssl.client.auth=required asks scrapers for a certificate).",
		f: enumField(func(b *Broker) *string { return &b.Metrics.SecurityProtocol }, ProtocolPlaintext, ProtocolSSL)},
	{name: "metrics.auth.bearer.token", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "Bearer token every request to metrics.listener must carry (Authorization: Bearer <token>); with metrics.auth.basic.* either is accepted. Unset (and no basic credentials): no authentication. A request without valid credentials gets 401.",
		f: strField(func(b *Broker) *string { return &b.Metrics.BearerToken }, nil)},
	{name: "metrics.auth.basic.username", typ: TypeString, kind: keyOptional, doc: "User name of the HTTP basic authentication metrics.listener asks for; set with metrics.auth.basic.password.",
		f: strField(func(b *Broker) *string { return &b.Metrics.BasicUsername }, nil)},
	{name: "metrics.auth.basic.password", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "Password of metrics.auth.basic.username.",
		f: strField(func(b *Broker) *string { return &b.Metrics.BasicPassword }, nil)},
	{name: "log.level", typ: TypeString, def: "info", doc: "Level of the broker's own log: debug, info, warn or error.",
		f: levelField(func(b *Broker) *slog.Level { return &b.LogLevel })},

	// TLS (Kafka's ssl.* keys, PEM only: KIP-651). Each may also be set
	// for one listener as listener.name.<lower-case name>.ssl.*.
	{name: "ssl.keystore.type", typ: TypeString, def: "JKS", doc: "The file format of the key store: Strata reads PEM only, so a listener with a key store needs PEM (Kafka's default is JKS).",
		f: enumField(func(b *Broker) *string { return &b.SSL.KeystoreType }, storeTypes...)},
	{name: "ssl.keystore.location", typ: TypeString, kind: keyOptional, doc: "The location of the key store file: with ssl.keystore.type=PEM, a PEM file holding the private key (PKCS#8, PKCS#1 or SEC 1; encrypted PKCS#8 with ssl.key.password) and its certificate chain, leaf first. Re-read when it changes (checked at most every few seconds); new handshakes use it.",
		f: strField(func(b *Broker) *string { return &b.SSL.KeystoreLocation }, nil)},
	{name: "ssl.keystore.password", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "The store password for the key store file. Not allowed with PEM, as in Kafka: an encrypted PEM key takes ssl.key.password.",
		f: strField(func(b *Broker) *string { return &b.SSL.KeystorePassword }, nil)},
	{name: "ssl.keystore.certificate.chain", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "Certificate chain in the format specified by ssl.keystore.type (PEM: X.509 certificates, leaf first), given inline instead of ssl.keystore.location.",
		f: strField(func(b *Broker) *string { return &b.SSL.KeystoreCertificateChain }, nil)},
	{name: "ssl.keystore.key", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "Private key in the format specified by ssl.keystore.type (PEM: PKCS#8, encrypted with ssl.key.password if it is set), given inline with ssl.keystore.certificate.chain.",
		f: strField(func(b *Broker) *string { return &b.SSL.KeystoreKey }, nil)},
	{name: "ssl.key.password", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "The password of the private key in the key store (PEM: an encrypted PKCS#8 key, PBES2 with PBKDF2 and AES-CBC).",
		f: strField(func(b *Broker) *string { return &b.SSL.KeyPassword }, nil)},
	{name: "ssl.truststore.type", typ: TypeString, def: "JKS", doc: "The file format of the trust store: Strata reads PEM only, so a listener with a trust store needs PEM (Kafka's default is JKS).",
		f: enumField(func(b *Broker) *string { return &b.SSL.TruststoreType }, storeTypes...)},
	{name: "ssl.truststore.location", typ: TypeString, kind: keyOptional, doc: "The location of the trust store file: with PEM, the X.509 certificates of the CAs trusted to sign client certificates (and, on the inter-broker listener, the other brokers' certificates). Re-read when it changes. Without a trust store, client certificates are not trusted and the system roots verify other brokers.",
		f: strField(func(b *Broker) *string { return &b.SSL.TruststoreLocation }, nil)},
	{name: "ssl.truststore.password", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "The password for the trust store file. Not allowed with PEM, as in Kafka.",
		f: strField(func(b *Broker) *string { return &b.SSL.TruststorePassword }, nil)},
	{name: "ssl.truststore.certificates", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "Trusted certificates in the format specified by ssl.truststore.type (PEM), given inline instead of ssl.truststore.location.",
		f: strField(func(b *Broker) *string { return &b.SSL.TruststoreCertificates }, nil)},
	{name: "ssl.client.auth", typ: TypeString, def: "none", doc: "Whether the broker asks clients for a certificate: required (a client without a trusted one is refused in the handshake), requested (asked for; a client without one connects as User:ANONYMOUS, one with an untrusted one is refused) or none. A trusted client certificate's subject becomes the connection's principal (ssl.principal.mapping.rules).",
		f: enumField(func(b *Broker) *string { return &b.SSL.ClientAuth }, "required", "requested", "none")},
	{name: "ssl.enabled.protocols", typ: TypeList, def: "TLSv1.2,TLSv1.3", doc: "The list of protocols enabled for SSL connections: TLSv1.2 and TLSv1.3 (TLSv1 and TLSv1.1 are accepted too).",
		f: listField(func(b *Broker) *[]string { return &b.SSL.EnabledProtocols }, tlsVersionItem, nil)},
	{name: "ssl.cipher.suites", typ: TypeList, def: "", doc: "A list of cipher suites by their IANA names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...) for TLS 1.2 and below; empty: Go's secure defaults. TLS 1.3's suites are not configurable in Go: they are accepted and always enabled.",
		f: listField(func(b *Broker) *[]string { return &b.SSL.CipherSuites }, cipherSuiteItem, nil)},
	{name: "ssl.protocol", typ: TypeString, def: "TLSv1.3", compat: true, doc: compatDoc + " Kafka: the protocol of the Java SSLContext; ssl.enabled.protocols bounds the versions here.",
		f: strField(func(b *Broker) *string { return &b.SSL.Protocol }, nil)},
	{name: "ssl.endpoint.identification.algorithm", typ: TypeString, def: "https", doc: "The endpoint identification algorithm to validate server hostname using server certificate: https checks that another broker's certificate names the host dialled (inter-broker connections); empty checks only that the certificate is trusted.",
		f: enumField(func(b *Broker) *string { return &b.SSL.EndpointIdentificationAlgorithm }, "https", "")},
	{name: "ssl.principal.mapping.rules", typ: TypeString, def: "DEFAULT", doc: "A list of rules for mapping from distinguished name from the client certificate to short name. The rules are evaluated in order and the first rule that matches a principal name is used to map it to a short name. Any later rules in the list are ignored. By default, distinguished name of the X.500 certificate will be the principal. Each rule is RULE:pattern/replacement/ with optional L or U (lower or upper case), or DEFAULT.",
		f: strField(func(b *Broker) *string { return &b.SSL.PrincipalMappingRules }, checkPrincipalRules)},

	// SASL (Kafka's sasl.* keys). Each may also be set for one listener
	// as listener.name.<lower-case name>.sasl.*.
	{name: "sasl.enabled.mechanisms", typ: TypeList, def: "GSSAPI", doc: "The list of SASL mechanisms enabled on SASL_PLAINTEXT and SASL_SSL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER. Kafka's default is GSSAPI (Kerberos), which Strata does not serve, so a SASL listener needs this set.",
		f: listField(func(b *Broker) *[]string { return &b.SASL.EnabledMechanisms }, saslMechanismItem, nil)},
	{name: "sasl.mechanism.inter.broker.protocol", typ: TypeString, def: "GSSAPI", doc: "SASL mechanism used for inter-broker communication when the inter-broker listener is SASL_PLAINTEXT or SASL_SSL; it must be enabled on that listener. The broker logs in with the username and password options of that listener's JAAS configuration for the mechanism.",
		f: enumField(func(b *Broker) *string { return &b.SASL.MechanismInterBrokerProtocol }, saslMechanisms...)},
	{name: "sasl.jaas.config", typ: TypePassword, kind: keyOptional, sensitive: true, doc: "JAAS login context parameters in the format used by JAAS configuration files. As in Kafka, brokers take it per listener and mechanism, as listener.name.<listener>.<mechanism>.sasl.jaas.config (e.g. listener.name.sasl_ssl.plain.sasl.jaas.config); unprefixed, it applies to every listener and mechanism without one. PLAIN's PlainLoginModule lists its users as user_<name>=\"<password>\"; the username and password options are the broker's own login to other brokers.",
		f: strField(func(b *Broker) *string { return &b.SASL.JAASConfig }, nil)},
	{name: "sasl.oauthbearer.jwks.endpoint.url", typ: TypeString, kind: keyOptional, doc: "The OAuth/OIDC provider URL from which the provider's JWKS can be retrieved (http, https, or file: a local JWKS file), to verify the JWTs of OAUTHBEARER clients. Keys are re-read when a token names an unknown key id.",
		f: strField(func(b *Broker) *string { return &b.SASL.OAuthBearerJWKSEndpointURL }, nil)},
	{name: "sasl.oauthbearer.expected.issuer", typ: TypeString, kind: keyOptional, doc: "The issuer (iss claim) an OAUTHBEARER token must name; unset: not checked.",
		f: strField(func(b *Broker) *string { return &b.SASL.OAuthBearerExpectedIssuer }, nil)},
	{name: "sasl.oauthbearer.expected.audience", typ: TypeList, kind: keyOptional, doc: "Comma-separated audiences of which an OAUTHBEARER token's aud claim must name one; unset: not checked.",
		f: listField(func(b *Broker) *[]string { return &b.SASL.OAuthBearerExpectedAudience }, nil, nil)},
	{name: "connections.max.reauth.ms", typ: TypeLong, def: "0", doc: "When positive, the longest a SASL session lasts before the client must re-authenticate on its connection (KIP-368): SaslAuthenticate v1 and later tell the client the session's lifetime (at most an OAUTHBEARER token's expiry), and a connection whose session expired is closed at its next request other than SaslHandshake and SaslAuthenticate. 0: sessions do not expire.",
		f: intField(0, func(b *Broker) *int64 { return &b.ConnectionsMaxReauthMs })},
	{name: "connection.failed.authentication.delay.ms", typ: TypeInt, def: "100", doc: "Connection close delay on failed authentication: the time by which the SASL_AUTHENTICATION_FAILED answer, and the close after it, are delayed, to slow down password guessing.",
		f: intField(0, func(b *Broker) *int32 { return &b.ConnectionFailedAuthenticationDelayMs })},

	// Authorization (ACLs).
	{name: "authorizer.class.name", typ: TypeString, def: "", doc: "The authorizer that checks every request against the ACLs (kept in the metadata store, managed with CreateAcls, DescribeAcls and DeleteAcls): org.apache.kafka.metadata.authorizer.StandardAuthorizer, kafka.security.authorizer.AclAuthorizer or strata all name Strata's, which follows the StandardAuthorizer's rules. Empty: no authorizer, every request is allowed.",
		f: strField(func(b *Broker) *string { return &b.Authorizer.ClassName }, authorizerClass)},
	{name: "super.users", typ: TypeList, def: "", doc: "List of users that will have super user access to all resources, separated by semicolons (User:admin;User:broker).",
		f: superUsersField(func(b *Broker) *[]string { return &b.Authorizer.SuperUsers })},
	{name: "allow.everyone.if.no.acl.found", typ: TypeBoolean, def: "false", doc: "With an authorizer: whether a resource that no ACL applies to is open to everyone (true) or to super users only (false).",
		f: boolField(func(b *Broker) *bool { return &b.Authorizer.AllowEveryoneIfNoACLFound })},

	// Log segments, flushing and retention.
	{name: "log.segment.bytes", dynamic: true, typ: TypeInt, def: "1073741824", doc: "Size at which the active segment is rolled.",
		f: intRange(14, math.MaxInt32, func(b *Broker) *int64 { return &b.LogSegmentBytes })},
	{name: "log.roll.ms", dynamic: true, typ: TypeLong, kind: keyDerived, synonyms: []string{"log.roll.hours"}, doc: "Age at which the active segment is rolled; defaults to log.roll.hours.",
		f: intField(1, func(b *Broker) *int64 { return &b.LogRollMs })},
	{name: "log.roll.hours", typ: TypeInt, def: "168", doc: "Age in hours at which the active segment is rolled, when log.roll.ms is not set.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.logRollHours })},
	{name: "log.roll.jitter.ms", dynamic: true, typ: TypeLong, kind: keyDerived, synonyms: []string{"log.roll.jitter.hours"}, compat: true, doc: compatDoc + " Kafka: random jitter subtracted from the roll age; defaults to log.roll.jitter.hours.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogRollJitterMs })},
	{name: "log.roll.jitter.hours", typ: TypeInt, def: "0", compat: true, doc: compatDoc + " Kafka: roll jitter in hours, when log.roll.jitter.ms is not set.",
		f: intRange(0, math.MaxInt32, func(b *Broker) *int64 { return &b.logRollJitterHours })},
	{name: "log.index.interval.bytes", dynamic: true, typ: TypeInt, def: "4096", doc: "Bytes of log between two entries of the sparse offset index.",
		f: intField(0, func(b *Broker) *int32 { return &b.LogIndexIntervalBytes })},
	{name: "log.page.cache.window.bytes", typ: TypeLong, def: "0", doc: "When positive, the bytes at the end of each segment being appended to that stay in the page cache; older bytes are handed to writeback and dropped from the cache (drop-behind), so that new appends reuse cache pages instead of growing the cache or making the kernel reclaim others, which pays on VMs that hand free memory back to the host and on boxes whose page cache is full. Readers within the window (followers, consumers at the tail) read from memory, those further behind from disk. 0 (the default) leaves the cache to the OS, as Kafka does.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogPageCacheWindowBytes })},
	{name: "replica.page.cache.window.bytes", typ: TypeLong, def: "67108864", doc: "log.page.cache.window.bytes for the partitions this broker follows: their pages are read only once it leads them, or by consumers fetching from it (KIP-392), and then at the tail, which the window keeps. Dropping the rest leaves the page cache to the leaders' data, which consumers read, and makes replication cheaper. 0 leaves the cache to the OS, as Kafka does.",
		f: intField(0, func(b *Broker) *int64 { return &b.ReplicaPageCacheWindowBytes })},
	{name: "log.segment.open.files.max", typ: TypeInt, def: "0", doc: "Most .log files of sealed segments kept open at once, over all partitions (Strata's own key: Kafka keeps every segment open); a sealed segment's file opens when it is read and the least recently read one closes to make room. Each partition's active segment keeps its own file open besides. 0 (the default) takes a quarter of the open-file limit (RLIMIT_NOFILE).",
		f: intField(0, func(b *Broker) *int32 { return &b.LogSegmentOpenFilesMax })},
	{name: "log.index.size.max.bytes", dynamic: true, typ: TypeInt, def: "10485760", compat: true, doc: compatDoc + " Kafka: largest offset index file; a full index rolls the segment.",
		f: intField(4, func(b *Broker) *int32 { return &b.LogIndexSizeMaxBytes })},
	{name: "log.flush.interval.messages", dynamic: true, typ: TypeLong, def: maxLong, doc: "Records appended before the log is fsynced (default: never, rely on replication and recovery).",
		f: intField(1, func(b *Broker) *int64 { return &b.LogFlushIntervalMessages })},
	{name: "log.flush.interval.ms", dynamic: true, typ: TypeLong, kind: keyDerived, doc: "Longest time appended data stays unflushed; unset (-1) never flushes on time.",
		f: intField(-1, func(b *Broker) *int64 { return &b.LogFlushIntervalMs })},
	{name: "log.retention.ms", dynamic: true, typ: TypeLong, kind: keyDerived, synonyms: []string{"log.retention.minutes", "log.retention.hours"}, doc: "Age after which a segment is deleted; -1 unlimited; defaults to log.retention.minutes, then log.retention.hours.",
		f: intField(math.MinInt64, func(b *Broker) *int64 { return &b.LogRetentionMs })},
	{name: "log.retention.minutes", typ: TypeInt, kind: keyOptional, doc: "Retention in minutes, when log.retention.ms is not set.",
		f: intRange(math.MinInt32, math.MaxInt32, func(b *Broker) *int64 { return &b.logRetentionMinutes })},
	{name: "log.retention.hours", typ: TypeInt, def: "168", doc: "Retention in hours, when neither log.retention.ms nor log.retention.minutes is set.",
		f: intRange(math.MinInt32, math.MaxInt32, func(b *Broker) *int64 { return &b.logRetentionHours })},
	{name: "log.retention.bytes", dynamic: true, typ: TypeLong, def: "-1", doc: "Largest size of a partition before old segments are deleted; -1 unlimited.",
		f: intField(-1, func(b *Broker) *int64 { return &b.LogRetentionBytes })},
	{name: "log.retention.check.interval.ms", typ: TypeLong, def: "300000", doc: "How often retention is checked.",
		f: intField(1, func(b *Broker) *int64 { return &b.LogRetentionCheckIntervalMs })},
	{name: "log.cleanup.policy", dynamic: true, typ: TypeList, def: "delete", doc: "delete, compact, or both: what happens to old segments.",
		f: policyField[Broker](func(b *Broker) *string { return &b.LogCleanupPolicy }, nil)},
	{name: "log.message.timestamp.type", dynamic: true, typ: TypeString, def: TimestampCreateTime, doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches with the broker's clock.",
		f: timestampTypeField[Broker](func(b *Broker) *string { return &b.LogMessageTimestampType }, nil)},
	{name: "log.message.timestamp.difference.max.ms", dynamic: true, typ: TypeLong, def: maxLong, compat: true, doc: compatDoc + " Kafka: largest allowed distance between a CreateTime timestamp and the broker's clock.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogMessageTimestampDifferenceMaxMs })},
	{name: "log.message.timestamp.before.max.ms", dynamic: true, typ: TypeLong, def: maxLong, compat: true, doc: compatDoc + " Kafka: how far in the past a CreateTime timestamp may be.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogMessageTimestampBeforeMaxMs })},
	{name: "log.message.timestamp.after.max.ms", dynamic: true, typ: TypeLong, def: maxLong, compat: true, doc: compatDoc + " Kafka: how far in the future a CreateTime timestamp may be.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogMessageTimestampAfterMaxMs })},
	{name: "log.preallocate", dynamic: true, typ: TypeBoolean, def: "false", compat: true, doc: compatDoc + " Kafka: preallocate segment files.",
		f: boolField(func(b *Broker) *bool { return &b.LogPreallocate })},
	{name: "log.segment.delete.delay.ms", dynamic: true, typ: TypeLong, def: "60000", compat: true, doc: compatDoc + " Kafka: delay before a deleted segment's files are removed.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogSegmentDeleteDelayMs })},
	{name: "log.local.retention.ms", dynamic: true, typ: TypeLong, def: "-2", doc: "Age after which a tiered segment's local copy is deleted; -2 follows retention.ms.",
		f: intField(-2, func(b *Broker) *int64 { return &b.LogLocalRetentionMs })},
	{name: "log.local.retention.bytes", dynamic: true, typ: TypeLong, def: "-2", doc: "Local size of a tiered partition; -2 follows retention.bytes.",
		f: intField(-2, func(b *Broker) *int64 { return &b.LogLocalRetentionBytes })},

	// Log cleaner (compaction).
	{name: "log.cleaner.enable", typ: TypeBoolean, def: "true", doc: "Run the log cleaner for compacted topics.",
		f: boolField(func(b *Broker) *bool { return &b.LogCleanerEnable })},
	{name: "log.cleaner.threads", dynamic: true, typ: TypeInt, def: "1", doc: "Cleaner threads.",
		f: intField(0, func(b *Broker) *int32 { return &b.LogCleanerThreads })},
	{name: "log.cleaner.backoff.ms", dynamic: true, typ: TypeLong, def: "15000", doc: "Sleep of the cleaner when no log needs cleaning.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogCleanerBackoffMs })},
	{name: "log.cleaner.dedupe.buffer.size", dynamic: true, typ: TypeLong, def: "134217728", doc: "Memory for the cleaner's key map, over all threads.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogCleanerDedupeBufferSize })},
	{name: "log.cleaner.io.max.bytes.per.second", dynamic: true, typ: TypeDouble, def: strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64), doc: "Cleaner I/O throttle.",
		f: floatRange(0, math.MaxFloat64, func(b *Broker) *float64 { return &b.LogCleanerIOMaxBytesPerSecond })},
	{name: "log.cleaner.delete.retention.ms", dynamic: true, typ: TypeLong, def: "86400000", doc: "How long tombstones are kept in a compacted topic.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogCleanerDeleteRetentionMs })},
	{name: "log.cleaner.min.compaction.lag.ms", dynamic: true, typ: TypeLong, def: "0", doc: "Youngest record age the cleaner may compact.",
		f: intField(0, func(b *Broker) *int64 { return &b.LogCleanerMinCompactionLagMs })},
	{name: "log.cleaner.max.compaction.lag.ms", dynamic: true, typ: TypeLong, def: maxLong, doc: "Oldest a record may get before its log is compacted regardless of dirtiness.",
		f: intField(1, func(b *Broker) *int64 { return &b.LogCleanerMaxCompactionLagMs })},
	{name: "log.cleaner.min.cleanable.ratio", dynamic: true, typ: TypeDouble, def: "0.5", doc: "Dirty share of a log above which it is cleaned.",
		f: floatRange(0, 1, func(b *Broker) *float64 { return &b.LogCleanerMinCleanableRatio })},

	// Tiered storage.
	{name: "remote.log.storage.system.enable", typ: TypeBoolean, def: "false", doc: "Enable tiered storage on this broker (topics opt in with remote.storage.enable).",
		f: boolField(func(b *Broker) *bool { return &b.RemoteLogStorageSystemEnable })},
	{name: "remote.log.storage.backend", typ: TypeString, def: "local", doc: "Object store of the tier: local (a directory) or s3.",
		f: enumField(func(b *Broker) *string { return &b.RemoteLogStorageBackend }, "local", "s3")},
	{name: "remote.log.storage.local.dir", typ: TypeString, kind: keyDerived, doc: "Directory of the local backend; defaults to <first log dir>/tier-store.",
		f: strField(func(b *Broker) *string { return &b.RemoteLogStorageLocalDir }, nonEmpty)},
	{name: "remote.log.storage.s3.bucket", typ: TypeString, def: "", doc: "S3 bucket of the tier.",
		f: strField(func(b *Broker) *string { return &b.RemoteLogStorageS3.Bucket }, nil)},
	{name: "remote.log.storage.s3.prefix", typ: TypeString, def: "", doc: "Prefix of every object key in the bucket.",
		f: strField(func(b *Broker) *string { return &b.RemoteLogStorageS3.Prefix }, nil)},
	{name: "remote.log.storage.s3.endpoint", typ: TypeString, def: "", doc: "Endpoint URL such as http://127.0.0.1:9000 (empty: AWS).",
		f: strField(func(b *Broker) *string { return &b.RemoteLogStorageS3.Endpoint }, httpURL)},
	{name: "remote.log.storage.s3.region", typ: TypeString, def: "us-east-1", doc: "Region of the bucket.",
		f: strField(func(b *Broker) *string { return &b.RemoteLogStorageS3.Region }, nonEmpty)},
	{name: "remote.log.storage.s3.access.key", typ: TypePassword, def: "", sensitive: true, doc: "Access key id (empty: the AWS environment or credential chain).",
		f: strField(func(b *Broker) *string { return &b.RemoteLogStorageS3.AccessKey }, nil)},
	{name: "remote.log.storage.s3.secret.key", typ: TypePassword, def: "", sensitive: true, doc: "Secret access key (empty: the AWS environment or credential chain).",
		f: strField(func(b *Broker) *string { return &b.RemoteLogStorageS3.SecretKey }, nil)},
	{name: "remote.log.storage.s3.path.style", typ: TypeBoolean, def: "false", doc: "Path-style bucket addressing (needed by MinIO).",
		f: boolField(func(b *Broker) *bool { return &b.RemoteLogStorageS3.PathStyle })},
	{name: "remote.log.manager.task.interval.ms", typ: TypeLong, def: "30000", doc: "How often sealed segments are copied to and expired from the tier.",
		f: intField(1, func(b *Broker) *int64 { return &b.RemoteLogManagerTaskIntervalMs })},
	{name: "remote.log.reader.threads", typ: TypeInt, def: "10", doc: "Concurrent reads from the tier.",
		f: intField(1, func(b *Broker) *int32 { return &b.RemoteLogReaderThreads })},
	{name: "remote.log.reader.cache.bytes", typ: TypeLong, def: "268435456", doc: "Size of the on-disk chunk cache of tier reads.",
		f: intField(0, func(b *Broker) *int64 { return &b.RemoteLogReaderCacheBytes })},
	{name: "remote.log.reader.memory.bytes", typ: TypeLong, def: "67108864", doc: "Memory for chunks of tier reads (read-ahead and recent chunks); a chunk goes to the on-disk cache only when read again after it left memory. The read-ahead per reader is an eighth of it, at most four 8 MiB chunks: raise it for a bucket far away.",
		f: intField(0, func(b *Broker) *int64 { return &b.RemoteLogReaderMemoryBytes })},

	// Consumer groups and committed offsets.
	{name: "group.initial.rebalance.delay.ms", typ: TypeInt, def: "3000", doc: "Wait for more members before the first rebalance of an empty group.",
		f: intRange(0, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupInitialRebalanceDelayMs })},
	{name: "group.min.session.timeout.ms", typ: TypeInt, def: "6000", doc: "Smallest session timeout a member may ask for.",
		f: intRange(0, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupMinSessionTimeoutMs })},
	{name: "group.max.session.timeout.ms", typ: TypeInt, def: "1800000", doc: "Largest session timeout a member may ask for.",
		f: intRange(0, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupMaxSessionTimeoutMs })},
	{name: "group.max.size", typ: TypeInt, def: strconv.Itoa(math.MaxInt32), doc: "Most members of one group.",
		f: intField(1, func(b *Broker) *int32 { return &b.GroupMaxSize })},
	{name: "group.consumer.session.timeout.ms", typ: TypeInt, def: "45000", doc: "Session timeout of consumer-protocol (KIP-848) group members.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupConsumerSessionTimeoutMs })},
	{name: "group.consumer.heartbeat.interval.ms", typ: TypeInt, def: "5000", doc: "Heartbeat interval given to consumer-protocol (KIP-848) group members.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupConsumerHeartbeatIntervalMs })},
	{name: "offsets.topic.num.partitions", typ: TypeInt, def: "50", doc: "Partitions of __consumer_offsets (fixed once created).",
		f: intField(1, func(b *Broker) *int32 { return &b.OffsetsTopicNumPartitions })},
	{name: "offsets.topic.replication.factor", typ: TypeShort, def: "1", doc: "Replication factor of __consumer_offsets (Kafka's default is 3; clamped to the live brokers).",
		f: intField(1, func(b *Broker) *int16 { return &b.OffsetsTopicReplicationFactor })},
	{name: "offsets.topic.segment.bytes", typ: TypeInt, def: "104857600", doc: "Segment size of __consumer_offsets.",
		f: intField(1, func(b *Broker) *int32 { return &b.OffsetsTopicSegmentBytes })},
	{name: "offsets.retention.minutes", typ: TypeInt, def: "10080", doc: "How long committed offsets of an empty group are kept.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.OffsetsRetentionMinutes })},
	{name: "offsets.retention.check.interval.ms", typ: TypeLong, def: "600000", doc: "How often expired offsets are looked for.",
		f: intField(1, func(b *Broker) *int64 { return &b.OffsetsRetentionCheckIntervalMs })},
	{name: "offset.metadata.max.bytes", typ: TypeInt, def: "4096", doc: "Longest metadata string an offset commit may carry; a longer one fails with OFFSET_METADATA_TOO_LARGE.",
		f: intRange(0, math.MaxInt32, func(b *Broker) *int32 { return &b.OffsetMetadataMaxBytes })},
	{name: "offsets.commit.timeout.ms", typ: TypeInt, def: "5000", doc: "How long an offset commit or group change waits for __consumer_offsets to replicate it before failing with COORDINATOR_NOT_AVAILABLE.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.OffsetsCommitTimeoutMs })},

	// Transactions (the coordinator on __transaction_state and producer-id
	// expiry); not applied yet, see knownUnwired in wired_test.go.
	{name: "transaction.state.log.num.partitions", typ: TypeInt, def: "50", doc: "The number of partitions for the transaction topic (should not change after deployment).",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int32 { return &b.TransactionStateLogNumPartitions })},
	{name: "transaction.state.log.replication.factor", typ: TypeShort, def: "3", doc: "The replication factor for the transaction topic (set higher to ensure availability); clamped to the live brokers.",
		f: intField(1, func(b *Broker) *int16 { return &b.TransactionStateLogReplicationFactor })},
	{name: "transaction.state.log.min.isr", typ: TypeInt, def: "2", doc: "The minimum number of replicas that must acknowledge a write to transaction topic in order to be considered successful.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int32 { return &b.TransactionStateLogMinISR })},
	{name: "transaction.state.log.segment.bytes", typ: TypeInt, def: "104857600", doc: "The transaction topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int32 { return &b.TransactionStateLogSegmentBytes })},
	{name: "transaction.max.timeout.ms", typ: TypeInt, def: "900000", doc: "The maximum allowed timeout for transactions. If a client's requested transaction time exceed this, then the broker will return an error in InitProducerIdRequest. This prevents a client from too large of a timeout, which can stall consumers reading from topics included in the transaction.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.TransactionMaxTimeoutMs })},
	{name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", typ: TypeInt, def: "10000", doc: "The interval at which to rollback transactions that have timed out.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.TransactionAbortTimedOutTransactionCleanupIntervalMs })},
	{name: "transactional.id.expiration.ms", typ: TypeInt, def: "604800000", doc: "The time in ms that the transaction coordinator will wait without receiving any transaction status updates for the current transaction before expiring its transactional id. Transactional IDs will not expire while a the transaction is still ongoing.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.TransactionalIDExpirationMs })},
	{name: "producer.id.expiration.ms", typ: TypeInt, def: "86400000", doc: "The time in ms that a topic partition leader will wait before expiring producer IDs. Producer IDs will not expire while a transaction associated to them is still ongoing. Note that producer IDs may expire sooner if the last write from the producer ID is deleted due to the topic's retention settings. Setting this value the same or higher than delivery.timeout.ms can help prevent expiration during retries and protect against message duplication, but the default should be reasonable for most use cases.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.ProducerIDExpirationMs })},
	{name: "add.partitions.to.txn.retry.backoff.ms", typ: TypeInt, def: "20", doc: "The server-side retry backoff when the server attempts to add the partition to the transaction.",
		f: intRange(1, math.MaxInt32, func(b *Broker) *int64 { return &b.AddPartitionsToTxnRetryBackoffMs })},
	{name: "add.partitions.to.txn.retry.backoff.max.ms", typ: TypeInt, def: "100", doc: "The maximum allowed timeout for adding partitions to transactions on the server side. It only applies to the actual add partition operations, not the verification. It should not exceed the produce request timeout.",
		f: intRange(0, math.MaxInt32, func(b *Broker) *int64 { return &b.AddPartitionsToTxnRetryBackoffMaxMs })},
	{name: "transaction.partition.verification.enable", typ: TypeBoolean, def: "true", doc: "Enable verification that checks that the partition has been added to the transaction before writing transactional records to the partition.",
		f: boolField(func(b *Broker) *bool { return &b.TransactionPartitionVerificationEnable })},
}

// kafkaListeners is the field derived from listeners,
// advertised.listeners and listener.security.protocol.map.
func kafkaListeners(b *Broker) []any { return []any{&b.KafkaListeners} }

// brokerIndex and brokerNames are derived from brokerKeys.
var (
	brokerIndex = map[string]*keyDef{}
	brokerNames []string
)

func init() {
	for i := range brokerKeys {
		brokerIndex[brokerKeys[i].name] = &brokerKeys[i]
		brokerNames = append(brokerNames, brokerKeys[i].name)
	}
	sort.Strings(brokerNames)
}

// replicaSelector accepts the one replica selector Strata implements (a
// Java class name: exact case), or nothing.
func replicaSelector(v string) error {
	if v != "" && v != RackAwareReplicaSelector {
		return fmt.Errorf("unsupported replica selector %q: want %s, or nothing for leader-only fetches", v, RackAwareReplicaSelector)
	}
	return nil
}

// BrokerKeys returns the names of all broker keys, sorted.
func BrokerKeys() []string { return append([]string(nil), brokerNames...) }
