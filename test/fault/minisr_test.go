package fault

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-broker/strata/test/harness"
)

// TestMinInsyncReplicas: RF=3 with min.insync.replicas=3. An acks=all
// produce sent just after a follower froze (SIGSTOP) is appended, and once
// the leader drops the silent follower from the ISR
// (replica.lag.time.max.ms) it is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND;
// the next produce is refused with NOT_ENOUGH_REPLICAS and appends
// nothing; once the follower is back in sync, produces succeed again.
func TestMinInsyncReplicas(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		// The frozen follower keeps its lease, so only the leader's lag
		// check shrinks the ISR.
		"broker.session.timeout.ms": "60000",
		"replica.lag.time.max.ms":   "2000",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*settle)
	defer cancel()
	adm := kadm.NewClient(c.client)
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	c.waitFullISR(topic, 1, settle)
	leader := leaderOf(c, topic, 0)

	// Raw acks=all produces to the leader, so its answer is what we see
	// (a client would retry these retriable errors).
	produce := func(v string) error {
		batch := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: time.Now().UnixMilli(), Records: []harness.RawRecord{{Value: []byte(v)}}})
		return kerr.ErrorForCode(harness.ProduceRaw(t, c.client.Broker(int(leader)), topic, resp.ID, 0, batch).ErrorCode)
	}
	if err := produce("in sync"); err != nil {
		t.Fatalf("produce with the full ISR: %v", err)
	}

	follower := c.node(leader%3 + 1)
	follower.proc.Pause()
	if err := produce("appended"); !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) {
		t.Fatalf("produce as the follower froze: %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", err)
	}
	if err := produce("refused"); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("produce with 2 of 3 in sync: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	follower.proc.Resume()
	c.waitFullISR(topic, 1, settle)
	if err := produce("back in sync"); err != nil {
		t.Fatalf("produce after the follower caught up: %v", err)
	}

	var got []string
	for _, r := range harness.ReadAll(t, c.seeds()[0], topic)[0] {
		got = append(got, string(r.Value))
	}
	if want := []string{"in sync", "appended", "back in sync"}; !slices.Equal(got, want) {
		t.Fatalf("partition holds %q, want %q", got, want)
	}
	c.waitIdentical(topic, 1, settle)
}
