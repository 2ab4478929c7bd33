package metadatatest

import (
	"context"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// Cluster is one metadata backend shared by several store handles, as
// several brokers share one etcd, with the fault hooks the suite needs.
type Cluster interface {
	// Open returns a new handle on the cluster (a broker's connection),
	// loaded and watching. It is closed when the test ends; closing it
	// earlier is allowed.
	Open(t *testing.T) metadata.Store
	// ExpireRegistration ends reg's lease now, as when its process stops
	// keeping it alive: the registration is not closed, it is lost.
	ExpireRegistration(t *testing.T, reg metadata.Registration)
	// ExpireSession ends the election session of term the same way.
	ExpireSession(t *testing.T, term metadata.Term)
}

// Run runs every subtest of the suite, each on a fresh cluster from
// newCluster.
func Run(t *testing.T, newCluster func(t *testing.T) Cluster) {
	tests := []struct {
		name string
		fn   func(t *testing.T, c Cluster)
	}{
		{"TopicLifecycle", testTopicLifecycle},
		{"CreateTopicRejectsBadInput", testCreateTopicRejectsBadInput},
		{"CreateTopicKeepsGivenID", testCreateTopicKeepsGivenID},
		{"AddPartitions", testAddPartitions},
		{"CompareAndSetPartition", testCompareAndSetPartition},
		{"CacheAcrossHandles", testCacheAcrossHandles},
		{"BrokerConfigs", testBrokerConfigs},
		{"ScramCredentials", testScramCredentials},
		{"ACLs", testACLs},

		{"ClientQuotas", testClientQuotas},
		{"ClosedStore", testClosedStore},
		{"RegisterBrokerAndClose", testRegisterBrokerAndClose},
		{"RegistrationExpiry", testRegistrationExpiry},
		{"RegisterTakesOverOwnIncarnation", testRegisterTakesOverOwnIncarnation},
		{"RequestShutdown", testRequestShutdown},
		{"StoreCloseWithdraws", testStoreCloseWithdraws},
		{"ProducerIDBlocksAreUnique", testProducerIDBlocksAreUnique},
		{"ElectionAndFencing", testElectionAndFencing},
		{"CampaignCanceled", testCampaignCanceled},
		{"WatchControllerEndsWithStore", testWatchControllerEndsWithStore},
		{"Reassignments", testReassignments},
		{"RemoteSegmentsFenced", testRemoteSegmentsFenced},
		{"ClaimRemoteSegments", testClaimRemoteSegments},
		{"ConcurrentRemoteSegments", testConcurrentRemoteSegments},
		{"DeletedTopicMarkers", testDeletedTopicMarkers},
		{"RestoreTopic", testRestoreTopic},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newCluster(t)) })
	}
}

// waitLimit bounds every wait of the suite.
const waitLimit = 20 * time.Second

// testCtx is bounded so that a hang fails the test rather than the run.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Part builds a partition state led by the first replica, all in sync.
func Part(replicas ...int32) metadata.PartitionState {
	return metadata.PartitionState{Replicas: replicas, Leader: replicas[0], ISR: replicas}
}

// TopicOf builds a topic with n partitions on replicas.
func TopicOf(name string, n int32, replicas ...int32) metadata.Topic {
	t := metadata.Topic{Name: name, Partitions: map[int32]metadata.PartitionState{}}
	for p := range n {
		t.Partitions[p] = Part(replicas...)
	}
	return t
}

// waitFor waits on c's change notifications until cond holds.
func waitFor(t *testing.T, c *metadata.Cache, what string, cond func() bool) {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	for {
		ch := c.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// WaitClosed waits until ch is closed, failing t after a bounded wait.
func WaitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitController reads w until it delivers want.
func waitController(t *testing.T, w <-chan metadata.ControllerInfo, want metadata.ControllerInfo) {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	var last metadata.ControllerInfo
	for {
		select {
		case info, ok := <-w:
			if !ok {
				t.Fatalf("controller watch closed while waiting for %+v (last %+v)", want, last)
			}
			if info == want {
				return
			}
			last = info
		case <-timer.C:
			t.Fatalf("timed out waiting for controller %+v (last %+v)", want, last)
		}
	}
}
