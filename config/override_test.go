package config

import (
	"errors"
	"testing"
)

func TestTopicOverrideBool(t *testing.T) {
	const key = "unclean.leader.election.enable"
	for _, tc := range []struct {
		overrides map[string]string
		v, ok     bool
		err       error
	}{
		{nil, false, false, nil},
		{map[string]string{"retention.ms": "1"}, false, false, nil},
		{map[string]string{key: "true"}, true, true, nil},
		{map[string]string{key: " TRUE "}, true, true, nil},
		{map[string]string{key: "false"}, false, true, nil},
		{map[string]string{key: "yes"}, false, false, ErrInvalidValue},
	} {
		v, ok, err := TopicOverrideBool(tc.overrides, key)
		if v != tc.v || ok != tc.ok || !errors.Is(err, tc.err) {
			t.Errorf("TopicOverrideBool(%v) = %v, %v, %v; want %v, %v, %v", tc.overrides, v, ok, err, tc.v, tc.ok, tc.err)
		}
	}
	if _, _, err := TopicOverrideBool(nil, "retention.ms"); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("non-boolean key: %v", err)
	}
	if _, _, err := TopicOverrideBool(nil, "no.such.key"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
}
