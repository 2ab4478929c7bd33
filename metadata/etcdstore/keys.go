package etcdstore

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/strata-broker/strata/metadata"
)

// DefaultPrefix is the key prefix used when Open is given "".
const DefaultPrefix = "/strata"

// Key layout below the prefix (see doc.go for the values).
const (
	clusterIDKey   = "cluster/id"
	topicsDir      = "topics/"
	partitionsDir  = "partitions/"
	brokersDir     = "brokers/ids/"
	producerIDsKey = "producer-ids/next"
	// brokerConfigsDir holds the dynamic broker configs: one key per
	// broker id, and defaultEntity for the cluster default (Kafka's
	// /config/brokers/<default> in ZooKeeper).
	brokerConfigsDir = "configs/brokers/"
	defaultEntity    = "<default>"
	// scramDir holds the SCRAM credentials: one key per user, its name
	// path-escaped.
	scramDir = "scram/users/"
	// The controller's keys (election.go): campaign keys of the
	// election, the elected controller's record and its epoch counter.
	controllerElectionDir = "controller/election"
	controllerLeaderKey   = "controller/leader"
	controllerEpochKey    = "controller/epoch"
)

// keys builds and parses every key the store uses; nothing else in the
// package spells a key.
type keys struct {
	root string // prefix + "/"; watching root never matches a sibling prefix
}

func newKeys(prefix string) keys {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return keys{root: strings.TrimRight(prefix, "/") + "/"}
}

func (k keys) clusterID() string        { return k.root + clusterIDKey }
func (k keys) producerIDs() string      { return k.root + producerIDsKey }
func (k keys) topic(name string) string { return k.root + topicsDir + name }
func (k keys) partitions(topic string) string {
	return k.root + partitionsDir + topic + "/"
}
func (k keys) partition(topic string, p int32) string {
	return k.partitions(topic) + strconv.FormatInt(int64(p), 10)
}
func (k keys) broker(id int32) string { return k.root + brokersDir + strconv.FormatInt(int64(id), 10) }
func (k keys) brokerConfigs(id int32) string {
	if id == metadata.ClusterDefault {
		return k.root + brokerConfigsDir + defaultEntity
	}
	return k.root + brokerConfigsDir + strconv.FormatInt(int64(id), 10)
}
func (k keys) scram(user string) string {
	return k.root + scramDir + url.PathEscape(user)
}
func (k keys) controllerElection() string { return k.root + controllerElectionDir }
func (k keys) controllerLeader() string   { return k.root + controllerLeaderKey }
func (k keys) controllerEpoch() string    { return k.root + controllerEpochKey }

// keyKind classifies a key found under the root.
type keyKind uint8

const (
	keyOther keyKind = iota // cluster id, producer ids, anything unknown
	keyTopic
	keyPartition
	keyBroker
	keyBrokerConfigs
	keyScram
	keyQuotas
)

// parse classifies key and extracts its topic name (or SCRAM user name)
// and number (partition index, broker id, or metadata.ClusterDefault for
// the cluster default's configs). Malformed keys come back as keyOther.
func (k keys) parse(key string) (kind keyKind, topic string, n int32) {
	rest, ok := strings.CutPrefix(key, k.root)
	if !ok {
		return keyOther, "", 0
	}
	if name, ok := strings.CutPrefix(rest, topicsDir); ok && name != "" && !strings.Contains(name, "/") {
		return keyTopic, name, 0
	}
	if tp, ok := strings.CutPrefix(rest, partitionsDir); ok {
		i := strings.LastIndexByte(tp, '/')
		if i <= 0 {
			return keyOther, "", 0
		}
		p, err := strconv.ParseInt(tp[i+1:], 10, 32)
		if err != nil || p < 0 {
			return keyOther, "", 0
		}
		return keyPartition, tp[:i], int32(p)
	}
	if ids, ok := strings.CutPrefix(rest, brokersDir); ok {
		id, err := strconv.ParseInt(ids, 10, 32)
		if err != nil || id < 0 {
			return keyOther, "", 0
		}
		return keyBroker, "", int32(id)
	}
	if entity, ok := strings.CutPrefix(rest, brokerConfigsDir); ok {
		if entity == defaultEntity {
			return keyBrokerConfigs, "", metadata.ClusterDefault
		}
		id, err := strconv.ParseInt(entity, 10, 32)
		if err != nil || id < 0 {
			return keyOther, "", 0
		}
		return keyBrokerConfigs, "", int32(id)
	}
	if esc, ok := strings.CutPrefix(rest, scramDir); ok {
		user, err := url.PathUnescape(esc)
		if err != nil || user == "" {
			return keyOther, "", 0
		}
		return keyScram, user, 0
	}
	if q, ok := strings.CutPrefix(rest, quotasDir); ok {
		if _, ok := parseQuotas(q); ok {
			return keyQuotas, q, 0 // change parses the entity again
		}
	}
	return keyOther, "", 0
}
