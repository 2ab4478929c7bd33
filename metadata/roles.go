package metadata

import (
	"context"
	"time"
)

// Topics creates, deletes and reconfigures topics.
type Topics interface {
	// CreateTopic atomically writes the topic and all its partitions; a
	// zero t.ID is replaced by NewTopicID(). Fails with ErrTopicExists,
	// ErrInvalidTopic or ErrInvalidPartitions.
	CreateTopic(ctx context.Context, t Topic) (rev int64, err error)
	// DeleteTopic atomically removes the topic and its partitions.
	// Fails with ErrUnknownTopic.
	DeleteTopic(ctx context.Context, name string) (rev int64, err error)
	// AddPartitions adds the partitions parts (indexes n..n+k-1 where n is
	// the current count) atomically. Fails with ErrInvalidPartitions when
	// the count moved on meanwhile or parts is malformed, ErrUnknownTopic
	// when the topic is gone.
	AddPartitions(ctx context.Context, topic string, parts map[int32]PartitionState) (rev int64, err error)
	// SetTopicConfigs replaces the topic's whole override map (nil or
	// empty clears it). Fails with ErrUnknownTopic.
	SetTopicConfigs(ctx context.Context, topic string, configs map[string]string) (rev int64, err error)
}

// BrokerConfigs stores the dynamic broker configurations (Kafka's dynamic
// broker configs): the cluster-wide default (Kafka's <default> entity)
// and each broker's own. The store keeps them as given; what they may
// hold is the config package's business. Reads go through the Cache
// (Cache.BrokerConfigs).
type BrokerConfigs interface {
	// SetBrokerConfigs replaces the dynamic configs of broker id, or the
	// cluster default when id is ClusterDefault; nil or empty removes
	// them. Fails with ErrInvalidBrokerID for any other negative id.
	// Concurrent writers: the last one wins, as for topic configs.
	SetBrokerConfigs(ctx context.Context, id int32, configs map[string]string) (rev int64, err error)
}

// ScramCredentials stores the users' SCRAM credentials (Kafka's
// AlterUserScramCredentials): per user, per mechanism, the salt,
// iterations, StoredKey and ServerKey, never a password. Reads go through
// the Cache (Cache.ScramCredential, Cache.ScramUsers).
type ScramCredentials interface {
	// SetScramCredentials replaces user's credentials, by mechanism; nil
	// or empty removes them. Concurrent writers of one user: the last one
	// wins, as for broker configs.
	SetScramCredentials(ctx context.Context, user string, creds map[string]ScramCredential) (rev int64, err error)
}

// ACLs stores the access-control bindings (Kafka's CreateAcls and
// DeleteAcls). Reads go through the Cache (Cache.ACLs), which every
// broker's watch keeps current. Writes of more ACLs than one etcd txn
// takes are split into several txns, each atomic.
type ACLs interface {
	// CreateACLs stores acls; those already stored stay as they are.
	// Every ACL must be Concrete (ErrInvalidACL otherwise, and nothing is
	// written).
	CreateACLs(ctx context.Context, acls []ACL) (rev int64, err error)
	// DeleteACLs removes acls; those not stored are ignored.
	DeleteACLs(ctx context.Context, acls []ACL) (rev int64, err error)
}

// ClientQuotas stores the client quotas (Kafka's AlterClientQuotas): per
// entity (a user, a client id, both, an ip, or a default of those), its
// values by key ("producer_byte_rate", "consumer_byte_rate",
// "request_percentage", "connection_creation_rate"). Reads go through
// the Cache (Cache.ClientQuota, Cache.ClientQuotas).
type ClientQuotas interface {
	// SetClientQuotas replaces entity's values; nil or empty removes
	// them. Fails with ErrInvalidQuotaEntity for an entity Kafka does not
	// allow. Concurrent writers of one entity: the last one wins.
	SetClientQuotas(ctx context.Context, entity QuotaEntity, values map[string]float64) (rev int64, err error)
}

// Partitions changes one partition's leader, ISR or replicas. Its
// writers are the controller, through its Term (fenced), and a
// partition's leader changing its own ISR; nothing else writes partition
// state (see metadata/controller).
type Partitions interface {
	// CompareAndSetPartition stores next only if the stored state still
	// has PartitionEpoch == prevPartitionEpoch (ErrStaleEpoch otherwise).
	// next must pass ValidateTransition (ErrInvalidPartitions);
	// ErrUnknownTopic if the partition does not exist.
	CompareAndSetPartition(ctx context.Context, topic string, partition, prevPartitionEpoch int32, next PartitionState) (rev int64, err error)
}

// Brokers registers live brokers.
type Brokers interface {
	// RegisterBroker publishes b for as long as the returned Registration
	// is open and the process keeps it alive; if the process dies the
	// registration vanishes after ttl. Fails with ErrBrokerRegistered if a
	// live registration already holds b.ID (a restarted broker retries
	// until its old registration expires).
	RegisterBroker(ctx context.Context, b Broker, ttl time.Duration) (Registration, error)
}

// Registration is a live broker registration.
type Registration interface {
	// Lost is closed when the registration ended without Close: the
	// store answered that its lease is gone (it expired, e.g. while the
	// store was out of reach for longer than the TTL). A store merely
	// out of reach does not close it: the lease may outlive the outage.
	// A lost registration does not come back; the broker registers again.
	Lost() <-chan struct{}
	// Revision is the store revision the registration was written at.
	Revision() int64
	// RequestShutdown starts the broker's controlled shutdown: it
	// rewrites the broker's record, under the same lease, with
	// ShuttingDown set, so that the controller moves its leaderships
	// away. Idempotent; fails with ErrClosed once the registration is
	// closed or lost.
	RequestShutdown(ctx context.Context) (rev int64, err error)
	// Close withdraws the registration at once. Idempotent.
	Close() error
}

// ProducerIDs hands out producer ids that are unique across brokers and
// restarts.
type ProducerIDs interface {
	// AllocateProducerIDs reserves the block [first, first+n) for the
	// caller; n must be positive.
	AllocateProducerIDs(ctx context.Context, n int64) (first int64, err error)
}

// Store is everything a broker needs from the metadata store, every role
// in one value. Only the composition root holds a Store; each component
// depends on the few roles it uses.
type Store interface {
	Topics
	BrokerConfigs
	ScramCredentials
	ACLs

	ClientQuotas
	Partitions
	Brokers
	ProducerIDs
	Reassignments
	RemoteSegments
	DeletedTopics
	TopicRestorer
	ControllerElection
	// ClusterID is the cluster's id, created once and then fixed.
	ClusterID() string
	// Cache is the watch-fed view of the store's content.
	Cache() *Cache
	// Close stops the watch, withdraws open registrations and releases
	// the connection. Controller terms end with ErrSessionLost.
	Close() error
}

// IsClosed reports, without waiting, whether ch is closed: whether a
// signal of this package (Term.Done, Registration.Lost, Cache.Done) has
// fired. A nil ch never is.
func IsClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
