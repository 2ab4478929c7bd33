package e2e

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// TestIdempotentRawProduce drives the broker's producer-state checks with
// hand-built batches: a resent batch is acknowledged with its original base
// offset and stored once (also after a restart), a sequence gap gets
// OUT_OF_ORDER_SEQUENCE_NUMBER, and after an epoch bump the old epoch gets
// INVALID_PRODUCER_EPOCH.
func TestIdempotentRawProduce(t *testing.T) {
	b := harness.Start(t, nil)
	const topic = "idempotent"
	id := harness.CreateTopic(t, b.Admin(), topic, 1, nil)
	cl := b.Client()

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	ir, err := init.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("init producer id: %v", err)
	}
	if ir.ErrorCode != 0 || ir.ProducerID < 0 || ir.ProducerEpoch < 0 {
		t.Fatalf("init producer id: error %d, id %d, epoch %d", ir.ErrorCode, ir.ProducerID, ir.ProducerEpoch)
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch

	batch := func(epoch int16, seq int32, n int, tag string) []byte {
		spec := harness.BatchSpec{ProducerID: pid, Epoch: epoch, Sequence: seq, FirstTs: 1_700_000_000_000}
		for i := range n {
			spec.Records = append(spec.Records, harness.RawRecord{Value: fmt.Appendf(nil, "%s-%d", tag, i), TsDelta: int64(i)})
		}
		return harness.BuildBatch(spec)
	}
	expect := func(what string, raw []byte, code int16, base int64) {
		t.Helper()
		pr := harness.ProduceRaw(t, cl, topic, id, 0, raw)
		if pr.ErrorCode != code || (code == 0 && pr.BaseOffset != base) {
			t.Errorf("%s: error %v base offset %d; want %v base offset %d (msg %v)",
				what, kerr.ErrorForCode(pr.ErrorCode), pr.BaseOffset, kerr.ErrorForCode(code), base, pr.ErrorMessage)
		}
	}

	first := batch(epoch, 0, 3, "first")
	second := batch(epoch, 3, 2, "second")
	expect("first batch", first, 0, 0)
	expect("first batch resent", first, 0, 0)
	expect("second batch", second, 0, 3)
	expect("second batch resent", second, 0, 3)
	expect("sequence gap (10 after 4)", batch(epoch, 10, 1, "gap"), kerr.OutOfOrderSequenceNumber.Code, 0)
	expect("next epoch from sequence 0", batch(epoch+1, 0, 1, "bumped"), 0, 5)
	expect("old epoch after bump", batch(epoch, 5, 1, "stale"), kerr.InvalidProducerEpoch.Code, 0)

	wantValues := []string{"first-0", "first-1", "first-2", "second-0", "second-1", "bumped-0"}
	checkValues := func(when string) {
		t.Helper()
		got := harness.ReadAll(t, b.Addr(), topic)[0]
		var vals []string
		for _, r := range got {
			vals = append(vals, string(r.Value))
		}
		if fmt.Sprint(vals) != fmt.Sprint(wantValues) {
			t.Errorf("%s: log holds %q, want %q", when, vals, wantValues)
		}
	}
	checkValues("before restart")

	// Producer state must survive a restart: the resend is still a duplicate.
	b.Restart()
	cl = b.Client()
	expect("bumped batch resent after restart", batch(epoch+1, 0, 1, "bumped"), 0, 5)
	expect("old epoch after restart", batch(epoch, 5, 1, "stale"), kerr.InvalidProducerEpoch.Code, 0)
	expect("next batch after restart", batch(epoch+1, 1, 1, "after"), 0, 6)
	wantValues = append(wantValues, "after-0")
	checkValues("after restart")
}
