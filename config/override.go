package config

import (
	"fmt"
	"strings"
)

// TopicOverrideBool returns the typed value of the boolean topic key in a
// topic's override map, parsed by the key table exactly as ResolveTopic
// parses it. ok is false when overrides has no value for key (the broker
// default applies). It is for readers that need one setting of a stored
// topic without resolving all of them (the metadata store and the
// controller). It fails with a *KeyError when key is not a boolean topic
// key or its value is malformed.
func TopicOverrideBool(overrides map[string]string, key string) (v, ok bool, err error) {
	d, known := topicIndex[key]
	if !known {
		return false, false, unknownKey(key, topicNames)
	}
	if d.typ != TypeBoolean {
		return false, false, invalid(key, fmt.Errorf("not a boolean key"))
	}
	raw, set := overrides[key]
	if !set {
		return false, false, nil
	}
	var t Topic
	if err := d.f.set(&t, strings.TrimSpace(raw)); err != nil {
		return false, false, invalid(key, err)
	}
	return d.f.get(&t) == "true", true, nil
}
