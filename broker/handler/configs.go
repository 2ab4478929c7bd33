package handler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config resource types (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs).
const (
	resourceTopic  = kmsg.ConfigResourceTypeTopic
	resourceBroker = kmsg.ConfigResourceTypeBroker
)

// errBrokerConfigReadOnly: Strata has no dynamic broker configuration yet.
var errBrokerConfigReadOnly = errors.New("handler: broker configs are static; set them in server.properties")

// errUnknownBroker names a broker resource that is not this broker.
var errUnknownBroker = errors.New("handler: unknown broker resource")

// listKeys are topic keys whose value is a comma-separated list, the only
// ones IncrementalAlterConfigs may APPEND to or SUBTRACT from.
var listKeys = map[string]bool{"cleanup.policy": true}

// checkBrokerResource checks that a broker resource names this broker
// (or is empty, meaning the cluster default).
func (e *Env) checkBrokerResource(name string) error {
	if name == "" || name == strconv.Itoa(int(e.Cfg.NodeID)) {
		return nil
	}
	return fmt.Errorf("%w: %q", errUnknownBroker, name)
}

// alterTopicConfigs validates the full override set of a topic and, unless
// validateOnly, stores it in etcd and applies it to the local partitions.
func (e *Env) alterTopicConfigs(ctx context.Context, topic string, next map[string]string, validateOnly bool) error {
	if _, ok := e.Cache.Topic(topic); !ok {
		return metadata.ErrUnknownTopic
	}
	if err := e.Cfg.ValidateTopic(next); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	if _, err := e.Store.SetTopicConfigs(ctx, topic, next); err != nil {
		return err
	}
	e.Log.Info("topic configs changed", "topic", topic, "configs", next)
	return e.Partitions.Sync()
}

// applyIncremental applies IncrementalAlterConfigs operations to a copy of
// the current overrides. APPEND and SUBTRACT on a key without an override
// start from its value without one (def), as Kafka's do.
func applyIncremental(cur map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, def func(key string) string) (map[string]string, error) {
	next := maps.Clone(cur)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		val := ""
		if op.Value != nil {
			val = *op.Value
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = val
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !listKeys[op.Name] {
				return nil, fmt.Errorf("%w: %s is not a list; APPEND/SUBTRACT need a list key", config.ErrInvalidValue, op.Name)
			}
			v, ok := next[op.Name]
			if !ok {
				v = def(op.Name)
			}
			items := splitItems(v)
			for _, v := range splitItems(val) {
				has := slices.Contains(items, v)
				if op.Op == kmsg.IncrementalAlterConfigOpAppend && !has {
					items = append(items, v)
				} else if op.Op == kmsg.IncrementalAlterConfigOpSubtract && has {
					items = slices.DeleteFunc(items, func(s string) bool { return s == v })
				}
			}
			next[op.Name] = strings.Join(items, ",")
		default:
			return nil, fmt.Errorf("%w: unknown operation %d on %s", config.ErrInvalidValue, op.Op, op.Name)
		}
	}
	return next, nil
}

func splitItems(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// topicDefault is the value of topic key name without an override.
func (e *Env) topicDefault(name string) string {
	for _, d := range e.Cfg.DescribeTopic(nil) {
		if d.Name == name {
			return d.Value
		}
	}
	return ""
}

// resourceKey names a config resource within a request.
type resourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// countResources counts how often a request names each resource: Kafka
// refuses one named twice (INVALID_REQUEST) and changes nothing of it.
func countResources[R any](rs []R, key func(R) resourceKey) map[resourceKey]int {
	n := make(map[resourceKey]int, len(rs))
	for _, r := range rs {
		n[key(r)]++
	}
	return n
}

// resourceError turns an error into a resource's code and message.
func resourceError(err error) (int16, *string) {
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, errBrokerConfigReadOnly):
		return kerr.InvalidRequest.Code, errorMessage(err)
	case errors.Is(err, errUnknownBroker):
		return kerr.InvalidRequest.Code, errorMessage(err)
	}
	return errorCode(err), errorMessage(err)
}

// alterResource applies a config change to one resource of AlterConfigs
// or IncrementalAlterConfigs, named times in the request: next turns a
// topic's current overrides into the new set. It returns the resource's
// error code and message.
func (e *Env) alterResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, times int, validateOnly bool,
	next func(cur map[string]string) (map[string]string, error)) (int16, *string) {
	if times > 1 {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("resource named more than once in one request")
	}
	var err error
	switch typ {
	case resourceTopic:
		t, ok := e.Cache.Topic(name)
		if !ok {
			err = metadata.ErrUnknownTopic
			break
		}
		var configs map[string]string
		if configs, err = next(t.Configs); err == nil {
			err = e.alterTopicConfigs(ctx, name, configs, validateOnly)
		}
	case resourceBroker:
		if err = e.checkBrokerResource(name); err == nil {
			err = errBrokerConfigReadOnly
		}
	default:
		return kerr.InvalidRequest.Code, kmsg.StringPtr("unsupported resource type")
	}
	return resourceError(err)
}
