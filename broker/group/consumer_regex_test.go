package group

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestConsumerGroupRegexSubscription: a KIP-848 regex is resolved as
// Kafka's coordinator does, against every topic (internal ones such as
// __consumer_offsets included) and matching whole names.
func TestConsumerGroupRegexSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t)
		e.topics.set(
			TopicInfo{"t", tid(1), 4},
			TopicInfo{"orders", tid(2), 2},
			TopicInfo{"orders-v2", tid(3), 1},
			TopicInfo{"__consumer_offsets", tid(4), 3},
			TopicInfo{"__transaction_state", tid(5), 2},
		)
		for i, tc := range []struct {
			regex string
			names []string // topics subscribed by name besides the regex
			want  map[[16]byte]int
		}{
			{"orders.*", nil, map[[16]byte]int{tid(2): 2, tid(3): 1}},
			{"order", nil, map[[16]byte]int{}}, // whole names only
			{"__consumer_offsets", nil, map[[16]byte]int{tid(4): 3}},
			{"__.*", []string{"t"}, map[[16]byte]int{tid(1): 4, tid(4): 3, tid(5): 2}},
			{".*", nil, map[[16]byte]int{tid(1): 4, tid(2): 2, tid(3): 1, tid(4): 3, tid(5): 2}},
		} {
			regex := tc.regex
			r := e.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: fmt.Sprint("regex-", i), MemberID: "m",
				RebalanceTimeout: 10 * time.Second, SubscribedTopics: tc.names, SubscribedRegex: &regex, Owned: Assignment{}})
			if r.Err != nil {
				t.Fatalf("regex %q: %v", regex, r.Err)
			}
			got := map[[16]byte]int{}
			for id, ps := range r.Assignment {
				if len(ps) > 0 {
					got[id] = len(ps)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("regex %q (names %v): assigned %v, want %v", regex, tc.names, got, tc.want)
			}
			for id, n := range tc.want {
				if got[id] != n {
					t.Fatalf("regex %q (names %v): assigned %v, want %v", regex, tc.names, got, tc.want)
				}
			}
		}
	})
}
