package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrNotDynamic: a key that cannot change at run time was given as a
// dynamic broker config. The error is a *StaticKeysError.
var ErrNotDynamic = errors.New("config: not a dynamic broker config")

// StaticKeysError names the static keys of a dynamic config change. Its
// message is Kafka's, which clients show as they get it.
type StaticKeysError struct {
	Keys []string // sorted
}

// Error renders Kafka's message, e.g. "Cannot update these configs
// dynamically: Set(log.dirs)".
func (e *StaticKeysError) Error() string {
	return "Cannot update these configs dynamically: Set(" + strings.Join(e.Keys, ", ") + ")"
}

// Unwrap returns ErrNotDynamic.
func (e *StaticKeysError) Unwrap() error { return ErrNotDynamic }

// IsDynamic reports whether name is a broker key that may change at run
// time (set by AlterConfigs or IncrementalAlterConfigs on a broker
// resource and applied live).
func IsDynamic(name string) bool {
	d, ok := brokerIndex[name]
	return ok && d.dynamic
}

// IsBrokerListKey reports whether name is a broker key whose value is a
// comma-separated list (IncrementalAlterConfigs may APPEND to and
// SUBTRACT from it).
func IsBrokerListKey(name string) bool {
	d, ok := brokerIndex[name]
	return ok && d.typ == TypeList
}

// CheckDynamic fails with a *StaticKeysError when configs names broker
// keys that are not dynamic. Unknown keys pass: WithDynamic reports them.
func CheckDynamic(configs map[string]string) error {
	var static []string
	for k := range configs {
		if d, ok := brokerIndex[k]; ok && !d.dynamic {
			static = append(static, k)
		}
	}
	if len(static) == 0 {
		return nil
	}
	sort.Strings(static)
	return &StaticKeysError{Keys: static}
}

// WithDynamic returns b's static configuration overlaid by the dynamic
// cluster default and then by this broker's dynamic configs (either may
// be nil), Kafka's precedence: per-broker dynamic, cluster-default
// dynamic, static, built-in default. b's own dynamic layers, if any, are
// replaced. Every key must be dynamic (*StaticKeysError otherwise) and
// known, and the result is parsed and checked by the same table and
// cross-key rules as at start-up (*KeyError). This is the check of a
// dynamic config change.
func (b *Broker) WithDynamic(clusterDefault, perBroker map[string]string) (*Broker, error) {
	def, err := dynamicLayer(clusterDefault)
	if err != nil {
		return nil, err
	}
	own, err := dynamicLayer(perBroker)
	if err != nil {
		return nil, err
	}
	return build(b.static, def, own)
}

func dynamicLayer(m map[string]string) (map[string]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if err := CheckDynamic(m); err != nil {
		return nil, err
	}
	return trimmed(m)
}

// Effective is WithDynamic for dynamic configs read back from the
// metadata store, which must yield a configuration whatever they hold:
// entries that are unknown, static or malformed are left out, and when
// the rest breaks a cross-key rule (they were checked against another
// broker's static configuration) this broker's dynamic configs are left
// out, then the cluster default too. The errors say what was left out.
func (b *Broker) Effective(clusterDefault, perBroker map[string]string) (*Broker, []error) {
	var errs []error
	def := usable("cluster default", clusterDefault, &errs)
	own := usable("per-broker", perBroker, &errs)
	tries := [][2]map[string]string{{def, own}}
	if own != nil && def != nil {
		tries = append(tries, [2]map[string]string{def, nil})
	}
	for _, try := range tries {
		if try[0] == nil && try[1] == nil {
			break
		}
		e, err := build(b.static, try[0], try[1])
		if err == nil {
			return e, errs
		}
		errs = append(errs, fmt.Errorf("dynamic configs left out: %w", err))
	}
	e, err := build(b.static, nil, nil)
	if err != nil { // b was built from the same static layer
		panic(fmt.Sprintf("config: static configuration no longer builds: %v", err))
	}
	return e, errs
}

// usable returns the entries of a stored dynamic layer that are dynamic
// keys with values their key accepts (trimmed); the others are reported
// in errs.
func usable(what string, m map[string]string, errs *[]error) map[string]string {
	var out map[string]string
	for _, k := range sortedKeys(m) {
		v := strings.TrimSpace(m[k])
		d, ok := brokerIndex[k]
		var scratch Broker
		switch {
		case !ok:
			*errs = append(*errs, fmt.Errorf("%s dynamic config %s left out: %w", what, k, unknownKey(k, brokerNames)))
			continue
		case !d.dynamic:
			*errs = append(*errs, fmt.Errorf("%s dynamic config %s left out: %w", what, k, &StaticKeysError{Keys: []string{k}}))
			continue
		}
		if err := d.f.set(&scratch, v); err != nil {
			*errs = append(*errs, fmt.Errorf("%s dynamic config left out: %w", what, invalid(k, err)))
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DynamicConfigs returns the dynamic layers b was built with (nil when
// empty): the cluster default and this broker's own. The maps are b's:
// do not modify them.
func (b *Broker) DynamicConfigs() (clusterDefault, perBroker map[string]string) {
	return b.dynDefault, b.dynBroker
}

// CheckReconfiguration applies Kafka's rules for changing a running
// broker's thread counts from b (its current configuration) to next: a
// new log.cleaner.threads or num.replica.fetchers must be at least 1, at
// least half the current value and at most double it, so that one change
// cannot starve or swamp the broker. Unchanged counts pass.
func (b *Broker) CheckReconfiguration(next *Broker) error {
	for _, c := range []struct {
		key      string
		cur, new int32
	}{
		{"log.cleaner.threads", b.LogCleanerThreads, next.LogCleanerThreads},
		{"num.replica.fetchers", b.NumReplicaFetchers, next.NumReplicaFetchers},
	} {
		if c.new == c.cur {
			continue
		}
		switch {
		case c.new < 1:
			return invalid(c.key, fmt.Errorf("dynamic thread count %d: must be at least 1", c.new))
		case c.new < c.cur/2:
			return invalid(c.key, fmt.Errorf("dynamic thread count %d: must be at least half the current value %d", c.new, c.cur))
		case int64(c.new) > 2*int64(c.cur):
			return invalid(c.key, fmt.Errorf("dynamic thread count %d: must not be more than double the current value %d", c.new, c.cur))
		}
	}
	return nil
}
