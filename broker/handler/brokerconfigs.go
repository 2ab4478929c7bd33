package handler

import (
	"context"
	"fmt"
	"strconv"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// Dynamic broker configs, as Kafka's: AlterConfigs and
// IncrementalAlterConfigs on a broker resource change the dynamic configs
// of one broker (the resource names its id) or the cluster-wide default
// (the empty name, Kafka's <default>), kept in the metadata store
// (metadata.BrokerConfigs). Every broker follows them into its
// configuration (Env.Cfg) and applies them live.
//
// A change is checked as a whole before anything is stored: every key
// must be dynamic (else INVALID_REQUEST, with Kafka's message "Cannot
// update these configs dynamically: Set(...)"), known and valid
// (INVALID_CONFIG names the key; Kafka answers INVALID_REQUEST here, a
// choice it calls a mistake), and the configuration it yields on this
// broker — this broker's static configuration under the new cluster
// default and its own dynamic configs, or under the cluster default and
// the new per-broker set — must pass the start-up rules, Kafka's rules
// for changing thread counts at run time (config.CheckReconfiguration),
// and resolve the configs of every existing topic that resolves now (so
// that no topic's partitions stop following their configs). A change of another broker's configs is checked against
// this broker's static configuration, as any broker may write the store;
// the broker it names applies what its own configuration accepts and logs
// the rest (config.Effective). Before answering, the broker waits until
// it has applied its own change, so a DescribeConfigs that follows sees
// it.

// brokerEntity parses a broker resource name: "" is the cluster default,
// else a broker id.
func brokerEntity(name string) (int32, error) {
	if name == "" {
		return metadata.ClusterDefault, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("%w: broker id must be an integer, but it is: %s", errInvalidRequest, name)
	}
	return int32(id), nil
}

// describeBroker answers DescribeConfigs for a broker resource: this
// broker's whole configuration, or the cluster default's keys.
func (e *Env) describeBroker(name string) ([]config.Entry, error) {
	id, err := brokerEntity(name)
	if err != nil {
		return nil, err
	}
	cfg := e.cfg()
	switch id {
	case metadata.ClusterDefault:
		return cfg.DescribeClusterDefault(), nil
	case cfg.NodeID:
		return cfg.DescribeBroker(), nil
	}
	return nil, fmt.Errorf("%w: unexpected broker id, expected %d or empty string, but received %s", errInvalidRequest, cfg.NodeID, name)
}

// alterBrokerConfigs changes the dynamic configs of the broker resource
// name (see the comment at the top of the file).
func (e *Env) alterBrokerConfigs(ctx context.Context, name string, validateOnly bool, change alterChange) error {
	id, err := brokerEntity(name)
	if err != nil {
		return err
	}
	static := e.Cfg.Static()
	def, own := e.Cache.BrokerConfigs(metadata.ClusterDefault), e.Cache.BrokerConfigs(static.NodeID)
	if id != metadata.ClusterDefault {
		own = e.Cache.BrokerConfigs(id)
	}
	// APPEND and SUBTRACT on a key this resource does not set start from
	// its value beneath: the static one for the cluster default, the
	// cluster default's (or static) one for a broker.
	below := func(key string) string {
		if id != metadata.ClusterDefault {
			if b, err := static.WithDynamic(def, nil); err == nil {
				return b.Raw[key]
			}
		}
		return static.Raw[key]
	}
	cur := def
	if id != metadata.ClusterDefault {
		cur = own
	}
	next, err := change(cur, config.IsBrokerListKey, below)
	if err != nil {
		return err
	}
	if err := config.CheckDynamic(next); err != nil {
		return err
	}
	var eff *config.Broker
	if id == metadata.ClusterDefault {
		eff, err = static.WithDynamic(next, own)
	} else {
		eff, err = static.WithDynamic(def, next)
	}
	if err != nil {
		return err
	}
	now := e.cfg()
	if id == metadata.ClusterDefault || id == static.NodeID {
		if err := now.CheckReconfiguration(eff); err != nil {
			return err
		}
	}
	for _, t := range e.Cache.Topics() {
		if _, err := eff.ResolveTopic(t.Configs); err != nil {
			if _, errNow := now.ResolveTopic(t.Configs); errNow == nil {
				return fmt.Errorf("topic %s would not resolve: %w", t.Name, err)
			}
		}
	}
	if validateOnly {
		return nil
	}
	rev, err := e.Store.SetBrokerConfigs(ctx, id, next)
	if err != nil {
		return err
	}
	e.Log.Info("dynamic broker configs changed", "broker", name, "configs", next)
	if err := e.Cfg.WaitRevision(ctx, rev); err != nil {
		return err
	}
	return e.Partitions.Sync()
}
