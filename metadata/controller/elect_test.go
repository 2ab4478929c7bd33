package controller

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// aliveOf is the liveness of the brokers ids, none shutting down.
func aliveOf(ids ...int32) Liveness { return stoppingOf(ids, nil) }

// stoppingOf is the liveness of the brokers alive, those of stopping in
// controlled shutdown.
func stoppingOf(alive, stopping []int32) Liveness {
	var bs []metadata.Broker
	for _, id := range alive {
		bs = append(bs, metadata.Broker{ID: id, ShuttingDown: slices.Contains(stopping, id)})
	}
	return LivenessOf(bs)
}

// epochs returns s with the given leader and partition epochs.
func epochs(s metadata.PartitionState, le, pe int32) metadata.PartitionState {
	s.LeaderEpoch, s.PartitionEpoch = le, pe
	return s
}

func TestReelect(t *testing.T) {
	const none = metadata.NoLeader
	r := []int32{1, 2, 3}
	for _, tc := range []struct {
		name    string
		in      metadata.PartitionState
		alive   []int32
		unclean bool
		want    metadata.PartitionState
		changed bool
	}{
		{"all alive", state(1, r, r), []int32{1, 2, 3}, false, state(1, r, r), false},
		{"dead follower leaves isr", state(1, r, r), []int32{1, 3}, false, epochs(state(1, r, []int32{1, 3}), 0, 1), true},
		{"dead leader, replica order wins", state(1, r, []int32{3, 1, 2}), []int32{2, 3}, false, epochs(state(2, r, []int32{3, 2}), 1, 1), true},
		{"dead leader, only isr members", state(1, r, []int32{1, 3}), []int32{2, 3}, false, epochs(state(3, r, []int32{3}), 1, 1), true},
		{"no live isr member goes offline", state(1, r, []int32{1}), []int32{2, 3}, false, epochs(state(none, r, []int32{1}), 1, 1), true},
		{"offline stays offline", epochs(state(none, r, []int32{1}), 1, 1), []int32{2}, false, epochs(state(none, r, []int32{1}), 1, 1), false},
		{"isr member returns", epochs(state(none, r, []int32{1, 3}), 1, 1), []int32{2, 3}, false, epochs(state(3, r, []int32{3}), 2, 2), true},
		{"unclean picks first live replica", state(1, r, []int32{1}), []int32{3, 2}, true, epochs(state(2, r, []int32{2}), 1, 1), true},
		{"unclean still prefers the isr", state(1, r, []int32{1, 3}), []int32{2, 3}, true, epochs(state(3, r, []int32{3}), 1, 1), true},
		{"nothing alive", state(1, r, r), nil, true, epochs(state(none, r, r), 1, 1), true},
		{"leader outside isr left alone", state(1, r, []int32{2, 3}), []int32{1, 2}, false, state(1, r, []int32{2, 3}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.Clone()
			got, changed := Reelect(tc.in, aliveOf(tc.alive...), tc.unclean)
			if changed != tc.changed || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Reelect = %+v, %v; want %+v, %v", got, changed, tc.want, tc.changed)
			}
			if !reflect.DeepEqual(tc.in, in) {
				t.Fatalf("input modified: %+v", tc.in)
			}
			if changed {
				if err := metadata.ValidateTransition(tc.in, got); err != nil {
					t.Fatalf("invalid transition: %v", err)
				}
				if len(got.ISR) > 0 && &got.ISR[0] == &tc.in.ISR[0] {
					t.Fatal("result shares the ISR slice")
				}
			}
		})
	}
}

// TestReelectControlledShutdown: brokers in controlled shutdown hand
// their leaderships to the first eligible ISR replica (never uncleanly),
// leave the ISRs they follow, keep the partitions no one else can lead,
// and are never elected.
func TestReelectControlledShutdown(t *testing.T) {
	const none = metadata.NoLeader
	r := []int32{1, 2, 3}
	for _, tc := range []struct {
		name            string
		in              metadata.PartitionState
		alive, stopping []int32
		unclean         bool
		want            metadata.PartitionState
		changed         bool
	}{
		{"leader hands over in replica order", state(1, r, []int32{1, 3, 2}), r, []int32{1}, false, epochs(state(2, r, []int32{3, 2}), 1, 1), true},
		{"leader skips a stopping replica", state(1, r, r), r, []int32{1, 2}, false, epochs(state(3, r, []int32{3}), 1, 1), true},
		{"follower leaves the isr", state(2, r, r), r, []int32{1}, false, epochs(state(2, r, []int32{2, 3}), 0, 1), true},
		{"sole isr member keeps leading", state(1, r, []int32{1}), r, []int32{1}, true, state(1, r, []int32{1}), false},
		{"all isr members stopping: leader kept, isr shrinks", state(1, r, []int32{1, 2}), r, []int32{1, 2}, false, epochs(state(1, r, []int32{1}), 0, 1), true},
		{"kept leader loses a dead isr member", state(1, r, []int32{1, 3}), []int32{1, 2}, []int32{1}, true, epochs(state(1, r, []int32{1}), 0, 1), true},
		{"not elected for a dead leader", state(3, r, []int32{3, 1}), []int32{1, 2}, []int32{1}, false, epochs(state(none, r, []int32{3, 1}), 1, 1), true},
		{"not elected uncleanly", state(3, r, []int32{3}), []int32{1}, []int32{1}, true, epochs(state(none, r, []int32{3}), 1, 1), true},
		{"offline partition waits for an eligible isr member", epochs(state(none, r, []int32{1}), 1, 1), r, []int32{1}, false, epochs(state(none, r, []int32{1}), 1, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := Reelect(tc.in, stoppingOf(tc.alive, tc.stopping), tc.unclean)
			if changed != tc.changed || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Reelect = %+v, %v; want %+v, %v", got, changed, tc.want, tc.changed)
			}
			if changed {
				if err := metadata.ValidateTransition(tc.in, got); err != nil {
					t.Fatalf("invalid transition: %v", err)
				}
			}
		})
	}
	// Requested elections never pick a stopping broker either; an
	// unclean election leaves a stopping leader alone.
	stop1 := stoppingOf(r, []int32{1})
	if _, err := PreferredLeader(state(2, r, r), stop1); !errors.Is(err, ErrPreferredLeaderNotAvailable) {
		t.Errorf("PreferredLeader of a stopping broker: %v", err)
	}
	if _, err := UncleanLeader(state(1, r, []int32{1}), stop1); !errors.Is(err, ErrElectionNotNeeded) {
		t.Errorf("UncleanLeader with a stopping leader: %v", err)
	}
	if next, _, _ := ReassignStep(state(2, []int32{2, 1, 3}, []int32{1, 2, 3}), []int32{1, 3}, stop1); next.Leader != 3 {
		t.Errorf("reassignment handed over to %d, want 3", next.Leader)
	}
}

func TestPreferredAndUncleanLeader(t *testing.T) {
	r := []int32{1, 2}
	got, err := PreferredLeader(state(2, r, r), aliveOf(1, 2))
	if err != nil || !reflect.DeepEqual(got, epochs(state(1, r, r), 1, 1)) {
		t.Fatalf("PreferredLeader = %+v, %v", got, err)
	}
	for _, tc := range []struct {
		s     metadata.PartitionState
		alive []int32
		want  error
	}{
		{state(1, r, r), []int32{1, 2}, ErrElectionNotNeeded},
		{state(2, r, []int32{2}), []int32{1, 2}, ErrPreferredLeaderNotAvailable},
		{state(2, r, r), []int32{2}, ErrPreferredLeaderNotAvailable},
	} {
		if _, err := PreferredLeader(tc.s, aliveOf(tc.alive...)); !errors.Is(err, tc.want) {
			t.Errorf("PreferredLeader(%+v, alive %v) = %v, want %v", tc.s, tc.alive, err, tc.want)
		}
	}

	if _, err := UncleanLeader(state(1, r, []int32{1}), aliveOf(1, 2)); !errors.Is(err, ErrElectionNotNeeded) {
		t.Errorf("UncleanLeader with a live leader: %v", err)
	}
	if _, err := UncleanLeader(state(1, r, []int32{1}), aliveOf()); !errors.Is(err, ErrEligibleLeadersNotAvailable) {
		t.Errorf("UncleanLeader with nothing alive: %v", err)
	}
	got, err = UncleanLeader(state(1, r, []int32{1}), aliveOf(2))
	if err != nil || !reflect.DeepEqual(got, epochs(state(2, r, []int32{2}), 1, 1)) {
		t.Fatalf("UncleanLeader = %+v, %v", got, err)
	}
}

// uncleanKey is the topic config that allows unclean leader election.
const uncleanKey = "unclean.leader.election.enable"

func TestUncleanSetting(t *testing.T) {
	for _, tc := range []struct {
		def     bool
		configs map[string]string
		want    bool
	}{
		{false, nil, false},
		{true, nil, true},
		{false, map[string]string{uncleanKey: "true"}, true},
		{false, map[string]string{uncleanKey: "TRUE"}, true},
		{true, map[string]string{uncleanKey: "false"}, false},
		{true, map[string]string{uncleanKey: "maybe"}, true}, // malformed: the default
	} {
		cfg, err := config.Parse(map[string]string{uncleanKey: strconv.FormatBool(tc.def)})
		if err != nil {
			t.Fatal(err)
		}
		if got := unclean(cfg, metadata.Topic{Configs: tc.configs}); got != tc.want {
			t.Errorf("default %v, configs %v: unclean = %v", tc.def, tc.configs, got)
		}
	}
}

// TestUncleanFollowsDynamicConfigs: the broker default of
// unclean.leader.election.enable is the dynamic one when the cache holds
// one: this broker's own over the cluster default, over the static one.
func TestUncleanFollowsDynamicConfigs(t *testing.T) {
	cache := metadata.NewCache()
	c := &Controller{cache: cache, id: 1, opts: Options{Config: config.Default()}}
	topic := metadata.Topic{Name: "t"}
	set := func(rev int64, id int32, v string) {
		ch := metadata.Change{Kind: metadata.ChangeBrokerConfigs, Entity: id, Configs: map[string]string{uncleanKey: v}}
		if v == "" {
			ch.Configs, ch.Delete = nil, true
		}
		cache.Apply(rev, []metadata.Change{ch})
	}
	if unclean(c.brokerConfig(), topic) {
		t.Fatal("unclean without any config")
	}
	set(2, metadata.ClusterDefault, "true")
	if !unclean(c.brokerConfig(), topic) {
		t.Fatal("the cluster default does not allow unclean elections")
	}
	set(3, 1, "false")
	if unclean(c.brokerConfig(), topic) {
		t.Fatal("this broker's own config does not win over the cluster default")
	}
	set(4, 2, "true") // another broker's
	set(5, 1, "")
	if !unclean(c.brokerConfig(), topic) {
		t.Fatal("after removing its own, the cluster default does not apply")
	}
	if unclean(c.brokerConfig(), metadata.Topic{Configs: map[string]string{uncleanKey: "false"}}) {
		t.Fatal("the topic override does not win")
	}
}

func TestOptionsFromConfig(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"broker.session.timeout.ms": "1500", "unclean.leader.election.enable": "true", "auto.leader.rebalance.enable": "false"})
	if err != nil {
		t.Fatal(err)
	}
	o := OptionsFromConfig(cfg, nil)
	if o.SessionTTL != 1500*time.Millisecond || !o.Config.UncleanLeaderElectionEnable || o.AutoLeaderRebalance {
		t.Fatalf("OptionsFromConfig = %+v", o)
	}
}
