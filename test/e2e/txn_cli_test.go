package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// cliTxn is the part of `strata txn ... --json` output the test reads.
type cliTxn struct {
	TransactionalID string `json:"transactional_id"`
	ProducerID      int64  `json:"producer_id"`
	ProducerEpoch   int16  `json:"producer_epoch"`
	State           string `json:"state"`
	AgeMs           int64  `json:"age_ms"`
	Partitions      []struct {
		Topic          string `json:"topic"`
		Partition      int32  `json:"partition"`
		Found          bool   `json:"found"`
		TxnStartOffset int64  `json:"txn_start_offset"`
	} `json:"partitions"`
}

// TestTxnCLIAndMetrics: a transaction left open (a hanging producer) is
// visible with `strata txn list` and `strata txn describe` (producer id
// and epoch, state, partitions, age, and each partition's open
// transaction start from DescribeProducers), and in the metrics as an
// ongoing transaction holding the partitions' last stable offset back;
// once committed, and another aborted, the counters show both.
func TestTxnCLIAndMetrics(t *testing.T) {
	b, metrics := startMeteredWith(t, map[string]string{"transaction.state.log.num.partitions": "1"})
	harness.CreateTopic(t, b.Admin(), "hang", 2, nil)
	ctx := testCtx(t)
	pr := b.Client(kgo.TransactionalID("hanging"), kgo.DefaultProduceTopic("hang"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if err := pr.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("open")}).FirstErr(); err != nil {
			t.Fatalf("produce to hang-%d: %v", p, err)
		}
	}

	out, errOut, code := strataCLI(t, "txn", "list", "--brokers", b.Addr(), "--json")
	var listed []cliTxn
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 {
		t.Fatalf("txn list: exit %d, %q, stderr %q", code, out, errOut)
	}
	if l := listed[0]; l.TransactionalID != "hanging" || l.State != "Ongoing" || l.ProducerID < 0 || l.AgeMs < 0 || len(l.Partitions) != 2 {
		t.Fatalf("listed %+v", l)
	}
	out, errOut, code = strataCLI(t, "txn", "list", "--brokers", b.Addr(), "--state", "Ongoing")
	if code != 0 || !strings.Contains(out, "hanging") || !strings.Contains(out, "hang-0,hang-1") {
		t.Fatalf("txn list table: exit %d, %q, stderr %q", code, out, errOut)
	}
	t.Logf("strata txn list --state Ongoing:\n%s", out)
	if out, _, code = strataCLI(t, "txn", "list", "--brokers", b.Addr(), "--min-age", "24h"); code != 0 || strings.Contains(out, "hanging") {
		t.Fatalf("txn list --min-age 24h: exit %d, %q", code, out)
	}
	out, errOut, code = strataCLI(t, "txn", "describe", "hanging", "--brokers", b.Addr(), "--json")
	var d cliTxn
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
		t.Fatalf("txn describe: exit %d, %q, stderr %q", code, out, errOut)
	}
	if d.ProducerID != listed[0].ProducerID || d.State != "Ongoing" || len(d.Partitions) != 2 {
		t.Fatalf("described %+v", d)
	}
	for _, p := range d.Partitions {
		if !p.Found || p.TxnStartOffset != 0 {
			t.Fatalf("partition %+v: want the producer's open transaction from offset 0", p)
		}
	}
	if out, _, code = strataCLI(t, "txn", "describe", "hanging", "--brokers", b.Addr()); code != 0 || !strings.Contains(out, "state:            Ongoing") {
		t.Fatalf("txn describe table: exit %d, %q", code, out)
	}
	t.Logf("strata txn describe hanging:\n%s", out)

	waitMetric := func(series string, want int) {
		t.Helper()
		waitFor(t, series+" = "+strconv.Itoa(want), func() bool { return metricValue(t, metrics, series) == want })
	}
	waitMetric("strata_transactions_ongoing", 1)
	waitMetric(`strata_last_stable_offset_lag{partition="0",topic="hang"}`, 1)
	waitMetric(`strata_coordinator_partition_load_time_seconds_count{coordinator="transaction"}`, 1)

	if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := pr.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("aborted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := pr.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	waitMetric("strata_transactions_committed_total", 1)
	waitMetric("strata_transactions_aborted_total", 1)
	waitMetric("strata_transactions_ongoing", 0)
	waitMetric(`strata_last_stable_offset_lag{partition="0",topic="hang"}`, 0)
}
