package etcdstore

import (
	"encoding/json"
	"fmt"

	"github.com/strata-broker/strata/metadata"
)

// The JSON values stored under the keys. They are private to this package
// so metadata's types carry no storage tags; unknown fields are ignored on
// read, so fields can be added later.

// topicRecord is the value of topics/<name>.
type topicRecord struct {
	ID      metadata.TopicID  `json:"id"`
	Configs map[string]string `json:"configs,omitempty"`
}

// partitionRecord is the value of partitions/<name>/<p>.
type partitionRecord struct {
	Replicas       []int32 `json:"replicas"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	PartitionEpoch int32   `json:"partitionEpoch"`
	ISR            []int32 `json:"isr"`
}

// brokerRecord is the value of brokers/ids/<id>.
type brokerRecord struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
	// Incarnation: see metadata.Broker.
	Incarnation string `json:"incarnation,omitempty"`
	// ShuttingDown: see metadata.Broker.
	ShuttingDown bool `json:"shuttingDown,omitempty"`
	// MaxPartitions: see metadata.Broker.
	MaxPartitions int32 `json:"maxPartitions,omitempty"`
	// Endpoints: see metadata.Broker.
	Endpoints []endpointRecord `json:"endpoints,omitempty"`
}

// endpointRecord is one advertised listener in a brokerRecord.
type endpointRecord struct {
	Listener         string `json:"listener"`
	Host             string `json:"host"`
	Port             int32  `json:"port"`
	SecurityProtocol string `json:"securityProtocol"`
}

// brokerConfigsRecord is the value of configs/brokers/<id> and
// configs/brokers/<default>.
type brokerConfigsRecord struct {
	Configs map[string]string `json:"configs"`
}

// scramRecord is the value of scram/users/<user>: the user's
// credentials by mechanism.
type scramRecord struct {
	Credentials map[string]metadata.ScramCredential `json:"credentials"`
}

func encodeTopic(id metadata.TopicID, configs map[string]string) string {
	return mustJSON(topicRecord{ID: id, Configs: configs})
}

func encodePartition(s metadata.PartitionState) string {
	return mustJSON(partitionRecord{Replicas: s.Replicas, Leader: s.Leader, LeaderEpoch: s.LeaderEpoch, PartitionEpoch: s.PartitionEpoch, ISR: s.ISR})
}

func encodeBroker(b metadata.Broker) string {
	r := brokerRecord{ID: b.ID, Host: b.Host, Port: b.Port, Rack: b.Rack, Incarnation: b.Incarnation, ShuttingDown: b.ShuttingDown, MaxPartitions: b.MaxPartitions}
	for _, e := range b.Endpoints {
		r.Endpoints = append(r.Endpoints, endpointRecord(e))
	}
	return mustJSON(r)
}

// mustJSON marshals the records above, which contain only strings, ints,
// slices and maps of those: json.Marshal cannot fail on them.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("etcdstore: marshal %T: %v", v, err)) // unreachable: plain data types
	}
	return string(b)
}

func decodeTopic(b []byte) (topicRecord, error) {
	var r topicRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decode topic record: %w", err)
	}
	return r, nil
}

func decodePartition(b []byte) (metadata.PartitionState, error) {
	var r partitionRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return metadata.PartitionState{}, fmt.Errorf("decode partition record: %w", err)
	}
	return metadata.PartitionState{Replicas: r.Replicas, Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch, ISR: r.ISR}, nil
}

func decodeBroker(b []byte) (metadata.Broker, error) {
	var r brokerRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return metadata.Broker{}, fmt.Errorf("decode broker record: %w", err)
	}
	mb := metadata.Broker{ID: r.ID, Host: r.Host, Port: r.Port, Rack: r.Rack, Incarnation: r.Incarnation, ShuttingDown: r.ShuttingDown, MaxPartitions: r.MaxPartitions}
	for _, e := range r.Endpoints {
		mb.Endpoints = append(mb.Endpoints, metadata.Endpoint(e))
	}
	return mb, nil
}

// change turns one key/value (a listed key, or a watch event) into a cache
// change. ok is false for keys the cache does not track.
func (k keys) change(key string, value []byte, deleted bool) (ch metadata.Change, ok bool, err error) {
	if a, ok := k.parseACL(key); ok {
		return metadata.Change{Kind: metadata.ChangeACL, Delete: deleted, ACL: a}, true, nil
	}
	kind, topic, n := k.parse(key)
	switch kind {
	case keyTopic:
		ch = metadata.Change{Kind: metadata.ChangeTopic, Delete: deleted, Topic: topic}
		if !deleted {
			r, err := decodeTopic(value)
			if err != nil {
				return ch, false, fmt.Errorf("key %s: %w", key, err)
			}
			ch.ID, ch.Configs = r.ID, r.Configs
		}
	case keyPartition:
		ch = metadata.Change{Kind: metadata.ChangePartition, Delete: deleted, Topic: topic, Partition: n}
		if !deleted {
			if ch.State, err = decodePartition(value); err != nil {
				return ch, false, fmt.Errorf("key %s: %w", key, err)
			}
		}
	case keyBroker:
		ch = metadata.Change{Kind: metadata.ChangeBroker, Delete: deleted, Broker: metadata.Broker{ID: n}}
		if !deleted {
			if ch.Broker, err = decodeBroker(value); err != nil {
				return ch, false, fmt.Errorf("key %s: %w", key, err)
			}
			ch.Broker.ID = n // the key is authoritative
		}
	case keyBrokerConfigs:
		ch = metadata.Change{Kind: metadata.ChangeBrokerConfigs, Delete: deleted, Entity: n}
		if !deleted {
			var r brokerConfigsRecord
			if err := json.Unmarshal(value, &r); err != nil {
				return ch, false, fmt.Errorf("key %s: decode broker configs record: %w", key, err)
			}
			ch.Configs = r.Configs
		}
	case keyScram:
		ch = metadata.Change{Kind: metadata.ChangeScram, Delete: deleted, User: topic}
		if !deleted {
			var r scramRecord
			if err := json.Unmarshal(value, &r); err != nil {
				return ch, false, fmt.Errorf("key %s: decode SCRAM record: %w", key, err)
			}
			ch.Scram = r.Credentials
		}
	case keyQuotas:
		e, _ := parseQuotas(topic)
		ch = metadata.Change{Kind: metadata.ChangeClientQuotas, Delete: deleted, Quota: e}
		if !deleted {
			var r quotasRecord
			if err := json.Unmarshal(value, &r); err != nil {
				return ch, false, fmt.Errorf("key %s: decode client quotas record: %w", key, err)
			}
			ch.Quotas = r.Values
		}
	default:
		return ch, false, nil
	}
	return ch, true, nil
}
