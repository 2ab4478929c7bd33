package handler

import (
	"context"
	"fmt"
	"maps"
	"slices"
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

// topicListKeys are topic keys whose value is a comma-separated list,
// the only ones IncrementalAlterConfigs may APPEND to or SUBTRACT from.
var topicListKeys = map[string]bool{"cleanup.policy": true}

// alterTopicConfigs validates the full override set of a topic and, unless
// validateOnly, stores it in etcd and applies it to the local partitions.
func (e *Env) alterTopicConfigs(ctx context.Context, topic string, next map[string]string, validateOnly bool) error {
	if _, ok := e.Cache.Topic(topic); !ok {
		return metadata.ErrUnknownTopic
	}
	if err := e.cfg().ValidateTopic(next); err != nil {
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
// the current configs of a resource. APPEND and SUBTRACT need a key for
// which isList holds; on a key the resource does not set they start from
// its value without it (below), as Kafka's do.
func applyIncremental(cur map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig,
	isList func(key string) bool, below func(key string) string) (map[string]string, error) {
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
			if !isList(op.Name) {
				return nil, fmt.Errorf("%w: %s is not a list; APPEND/SUBTRACT need a list key", config.ErrInvalidValue, op.Name)
			}
			v, ok := next[op.Name]
			if !ok {
				v = below(op.Name)
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
	for _, d := range e.cfg().DescribeTopic(nil) {
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

// configsDenied is the code of a config resource whose configs the
// principal may not describe or alter (op): a topic's
// TOPIC_AUTHORIZATION_FAILED, a broker's CLUSTER_AUTHORIZATION_FAILED
// (its configs are the cluster's resource); 0 when it may, and for types
// that are refused anyway.
func (e *Env) configsDenied(req *Request, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) int16 {
	switch {
	case typ == resourceTopic && !e.allowedTopic(req, op, name):
		return kerr.TopicAuthorizationFailed.Code
	case typ == resourceBroker && !e.allowedCluster(req, op):
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}

// resourceError turns an error into a resource's code and message.
func resourceError(err error) (int16, *string) {
	return errorCode(err), errorMessage(err)
}

// alterChange turns a resource's current configs into the new set;
// isList and below serve applyIncremental.
type alterChange func(cur map[string]string, isList func(string) bool, below func(string) string) (map[string]string, error)

// alterResource applies a config change to one resource of AlterConfigs
// or IncrementalAlterConfigs, named times in the request: next turns the
// resource's current configs (a topic's overrides, or the dynamic configs
// of a broker or of the cluster default) into the new set. It returns the
// resource's error code and message.
func (e *Env) alterResource(ctx context.Context, req *Request, typ kmsg.ConfigResourceType, name string, times int, validateOnly bool, next alterChange) (int16, *string) {
	if times > 1 {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("resource named more than once in one request")
	}
	if code := e.configsDenied(req, aclAlterConfigs, typ, name); code != 0 {
		return code, kmsg.StringPtr("Authorization failed.")
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
		if configs, err = next(t.Configs, func(k string) bool { return topicListKeys[k] }, e.topicDefault); err == nil {
			err = e.alterTopicConfigs(ctx, name, configs, validateOnly)
		}
	case resourceBroker:
		err = e.alterBrokerConfigs(ctx, name, validateOnly, next)
	default:
		return kerr.InvalidRequest.Code, kmsg.StringPtr("unsupported resource type")
	}
	return resourceError(err)
}
