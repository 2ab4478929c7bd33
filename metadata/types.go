package metadata

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
)

// Sentinel errors shared by every metadata store. Wrap them with %w; the
// broker maps them to Kafka error codes in one place.
var (
	// ErrTopicExists: CreateTopic found a topic with that name.
	ErrTopicExists = errors.New("metadata: topic already exists")
	// ErrUnknownTopic: the topic (or partition) does not exist, or was
	// deleted and re-created since the caller looked.
	ErrUnknownTopic = errors.New("metadata: unknown topic or partition")
	// ErrStaleEpoch: a compare-and-swap lost because the stored state no
	// longer has the epoch the caller based its change on.
	ErrStaleEpoch = errors.New("metadata: stale partition epoch")
	// ErrInvalidPartitions: a partition set or state is malformed (gaps,
	// empty replica list, leader outside the replicas, epochs going back).
	ErrInvalidPartitions = errors.New("metadata: invalid partitions")
	// ErrInvalidTopic: the topic name is not a legal Kafka topic name.
	ErrInvalidTopic = errors.New("metadata: invalid topic name")
	// ErrBrokerRegistered: another live registration holds this broker id.
	ErrBrokerRegistered = errors.New("metadata: broker id already registered")
	// ErrClosed: the store, cache or controller term was closed.
	ErrClosed = errors.New("metadata: closed")
	// ErrTopicIDInUse: a topic to restore carries the id of a topic that
	// exists under another name.
	ErrTopicIDInUse = errors.New("metadata: topic id already in use")
	// ErrFenced: a write of a controller Term failed because that term is
	// over (its session ended, its campaign key is gone, or a newer
	// controller epoch was claimed).
	ErrFenced = errors.New("metadata: fenced: the controller term is over")
	// ErrSessionLost: a controller candidate's session ended without
	// Close: its lease expired or the store became unreachable or closed.
	ErrSessionLost = errors.New("metadata: controller session lost")
	// ErrUnavailable: the store could not be reached or could not answer
	// now (no connection, no quorum, a timeout). The request may or may
	// not have taken effect; retrying later is right. The store logs such
	// an outage itself, so callers that retry need not.
	ErrUnavailable = errors.New("metadata: store unavailable")
	// ErrRemoteFenced: a remote-segment write carried a leader epoch older
	// than one already written for the partition (a deposed leader).
	ErrRemoteFenced = errors.New("metadata: remote segment write fenced by a newer leader epoch")
	// ErrRemoteTopicDeleted: a remote-segment write named a topic id whose
	// topic was deleted; its remote data is being removed.
	ErrRemoteTopicDeleted = errors.New("metadata: remote segment write for a deleted topic")
	// ErrTooLarge: one write holds more than the store takes in one
	// atomic change (a topic of more than MaxPartitionsPerWrite
	// partitions, or more bytes or operations than the store's limits).
	ErrTooLarge = errors.New("metadata: write too large for one metadata change")
	// ErrInvalidBrokerID: a broker id is negative (and not ClusterDefault
	// where that is allowed).
	ErrInvalidBrokerID = errors.New("metadata: invalid broker id")
	// ErrNoSpace: the store refuses writes that would grow it, because its
	// quota or its disk is full; reads and deletions still work.
	ErrNoSpace = errors.New("metadata: metadata store out of space")
)

// MaxPartitionsPerWrite bounds the partitions one topic creation or one
// partition increase may write: they are one atomic change of the
// metadata store. It is the 10,000 records Kafka's controller accepts
// in one operation (QuorumController's MAX_RECORDS_PER_USER_OP); etcd
// needs --max-txn-ops above it (the embedded etcd allows it).
const MaxPartitionsPerWrite = 10000

// ClusterDefault stands for the whole cluster where BrokerConfigs and
// Cache.BrokerConfigs take a broker id: the cluster-wide default of the
// dynamic broker configs (Kafka's <default> entity, the empty resource
// name).
const ClusterDefault int32 = -1

// CheckConfigEntity checks that id names a broker (non-negative) or the
// cluster default.
func CheckConfigEntity(id int32) error {
	if id < 0 && id != ClusterDefault {
		return fmt.Errorf("%w: %d", ErrInvalidBrokerID, id)
	}
	return nil
}

// NoLeader is the Leader value of a partition that has no leader.
const NoLeader int32 = -1

// MaxTopicNameLen is Kafka's limit on topic name length.
const MaxTopicNameLen = 249

// TopicID is a topic's 16-byte UUID. It survives renames of nothing (topics
// cannot be renamed) but tells a re-created topic from the old one.
type TopicID [16]byte

// NewTopicID returns a random version-4 UUID, skipping the values Kafka
// never hands out: the zero id and ids whose text form starts with '-'.
func NewTopicID() TopicID {
	for {
		var id TopicID
		_, _ = rand.Read(id[:])   // crypto/rand.Read never fails
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
		if id[0]>>2 != 62 {       // base64url digit 62 is '-'
			return id
		}
	}
}

// ParseTopicID parses the 22-character base64url form String produces.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	if base64.RawURLEncoding.DecodedLen(len(s)) != len(id) {
		return id, fmt.Errorf("metadata: parse topic id %q: want 22 base64url characters", s)
	}
	if _, err := base64.RawURLEncoding.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("metadata: parse topic id %q: %w", s, err)
	}
	return id, nil
}

// String renders the id the way Kafka prints topic ids: base64url, no padding.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// IsZero reports whether id is the all-zero "no id" value.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// MarshalText encodes the id as String does (so JSON carries the Kafka form).
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the form MarshalText writes.
func (id *TopicID) UnmarshalText(b []byte) error {
	v, err := ParseTopicID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Topic is one topic: its name, id, config overrides (only keys that differ
// from the broker defaults) and the state of every partition, keyed 0..n-1.
type Topic struct {
	Name       string
	ID         TopicID
	Configs    map[string]string
	Partitions map[int32]PartitionState
}

// Clone returns a deep copy the caller may modify.
func (t Topic) Clone() Topic {
	c := t
	c.Configs = maps.Clone(t.Configs)
	if t.Partitions != nil {
		c.Partitions = make(map[int32]PartitionState, len(t.Partitions))
		for p, s := range t.Partitions {
			c.Partitions[p] = s.Clone()
		}
	}
	return c
}

// Validate checks the name and that the partitions are exactly 0..n-1
// (n ≥ 1), each with a valid state.
func (t Topic) Validate() error {
	if err := ValidateTopicName(t.Name); err != nil {
		return err
	}
	if len(t.Partitions) == 0 {
		return fmt.Errorf("topic %q has no partitions: %w", t.Name, ErrInvalidPartitions)
	}
	return ValidateNewPartitions(t.Name, 0, t.Partitions)
}

// ValidateNewPartitions checks that parts holds exactly the indexes
// from..from+len(parts)-1, each with a valid state.
func ValidateNewPartitions(topic string, from int32, parts map[int32]PartitionState) error {
	for p, s := range parts {
		if p < from || int64(p) >= int64(from)+int64(len(parts)) {
			return fmt.Errorf("topic %q partition %d: indexes must run %d..%d without gaps: %w",
				topic, p, from, int64(from)+int64(len(parts))-1, ErrInvalidPartitions)
		}
		if err := s.Validate(); err != nil {
			return fmt.Errorf("topic %q partition %d: %w", topic, p, err)
		}
	}
	return nil
}

// ValidateTopicName applies Kafka's rules: 1..249 characters from
// [a-zA-Z0-9._-], and not "." or "..".
func ValidateTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > MaxTopicNameLen {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has illegal character %q", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// PartitionState is a partition's replica assignment and leadership, as
// KRaft's PartitionRecord keeps it. LeaderEpoch grows when the leader
// changes; PartitionEpoch grows on every change and is what
// compare-and-swap updates are checked against.
type PartitionState struct {
	Replicas       []int32
	Leader         int32 // NoLeader (-1) when offline
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// Clone returns a copy that shares no slices with s.
func (s PartitionState) Clone() PartitionState {
	c := s
	c.Replicas = slices.Clone(s.Replicas)
	c.ISR = slices.Clone(s.ISR)
	return c
}

// Validate checks the state on its own: at least one replica, no
// duplicates, non-negative epochs, ISR ⊆ Replicas, and a leader that is
// NoLeader or one of the replicas.
func (s PartitionState) Validate() error {
	if len(s.Replicas) == 0 {
		return fmt.Errorf("no replicas: %w", ErrInvalidPartitions)
	}
	if s.LeaderEpoch < 0 || s.PartitionEpoch < 0 {
		return fmt.Errorf("negative epoch: %w", ErrInvalidPartitions)
	}
	for i, r := range s.Replicas {
		if r < 0 || slices.Contains(s.Replicas[:i], r) {
			return fmt.Errorf("replica %d invalid or repeated: %w", r, ErrInvalidPartitions)
		}
	}
	for i, r := range s.ISR {
		if !slices.Contains(s.Replicas, r) || slices.Contains(s.ISR[:i], r) {
			return fmt.Errorf("isr member %d not a replica or repeated: %w", r, ErrInvalidPartitions)
		}
	}
	if s.Leader != NoLeader && !slices.Contains(s.Replicas, s.Leader) {
		return fmt.Errorf("leader %d not a replica: %w", s.Leader, ErrInvalidPartitions)
	}
	return nil
}

// ValidateTransition checks that next may replace a state whose partition
// epoch is prev.PartitionEpoch: next must be valid, its PartitionEpoch must
// grow and its LeaderEpoch must not shrink.
func ValidateTransition(prev, next PartitionState) error {
	if err := next.Validate(); err != nil {
		return err
	}
	if next.PartitionEpoch <= prev.PartitionEpoch {
		return fmt.Errorf("partition epoch %d must exceed %d: %w", next.PartitionEpoch, prev.PartitionEpoch, ErrInvalidPartitions)
	}
	if next.LeaderEpoch < prev.LeaderEpoch {
		return fmt.Errorf("leader epoch %d below %d: %w", next.LeaderEpoch, prev.LeaderEpoch, ErrInvalidPartitions)
	}
	return nil
}

// Broker is one live broker as it registered itself: id, the advertised
// Kafka listener address, and an optional rack.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack string
	// Incarnation identifies the broker's log directory (a random token
	// kept there). A broker restarted on the same directory after a crash
	// may take over a registration that still carries its incarnation,
	// instead of waiting for the dead process's lease to expire.
	Incarnation string
	// ShuttingDown marks a broker in controlled shutdown
	// (Registration.RequestShutdown, Kafka's inControlledShutdown): it
	// still serves, but the controller moves its leaderships away, takes
	// it out of ISRs and elects it nowhere, and leaders take it into no
	// ISR.
	ShuttingDown bool
	// MaxPartitions is the most partition replicas the broker hosts
	// (max.broker.partitions, capped by its open-file limit); placements
	// that would put more on it are refused. 0: not published (no limit
	// known).
	MaxPartitions int32
	// Endpoints are the broker's advertised listeners by name (Kafka's
	// endpoints of a broker registration); Host and Port are those of its
	// inter-broker listener. Empty (a registration written before
	// listeners were named): Host and Port serve every listener.
	Endpoints []Endpoint
}

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener         string // the listener's name, upper case ("PLAINTEXT", "CLIENT")
	Host             string
	Port             int32
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
}

// Addr returns host:port.
func (e Endpoint) Addr() string { return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))) }

// Addr returns host:port.
func (b Broker) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))) }

// Endpoint returns the broker's endpoint for a listener; false when the
// broker has no such listener (clients of that listener do not see it,
// as in Kafka). A broker registered without endpoints answers every
// listener with Host and Port.
func (b Broker) Endpoint(listener string) (Endpoint, bool) {
	if len(b.Endpoints) == 0 {
		return Endpoint{Listener: listener, Host: b.Host, Port: b.Port}, true
	}
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// ScramCredential is one user's credential for one SCRAM mechanism (RFC
// 5802): what the server needs to check a client's proof and prove
// itself, from which the password cannot be recovered.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int32  `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}
