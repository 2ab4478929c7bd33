package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Settings collects repeated key=value command-line flags into a map of
// configuration keys (the benchmarks' -set); it is a flag.Value.
type Settings map[string]string

// String lists the settings as key=value, sorted by key.
func (s Settings) String() string {
	var kvs []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		kvs = append(kvs, k+"="+s[k])
	}
	return strings.Join(kvs, " ")
}

// Set adds one key=value.
func (s Settings) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", kv)
	}
	s[k] = v
	return nil
}
