package e2e

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/tmpfs"
)

// TestDiskFull runs the real broker binary with its log dir, and the
// embedded etcd under it, on a small tmpfs and produces until the disk is
// full: the produce is KAFKA_STORAGE_ERROR (not UNKNOWN_SERVER_ERROR),
// what was acknowledged stays readable, a metadata write is a clear
// KAFKA_STORAGE_ERROR rather than a dead broker, the broker stops and
// starts again on the full disk, a deletion still works, and once it
// freed space produces and metadata writes work again without a restart.
// Every stop is clean (the harness checks the exit status).
func TestDiskFull(t *testing.T) {
	// etcd preallocates two WAL segments of 64 MB; about 120 MB remain.
	mnt := tmpfs.Mount(t, 256<<20)
	metrics := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	p := harness.StartProcess(t, map[string]string{
		"log.dirs":                    mnt,
		"metrics.listener":            metrics,
		"metadata.etcd.reserve.bytes": strconv.Itoa(32 << 20),
		"log.segment.bytes":           strconv.Itoa(4 << 20),
	})
	cl := harness.NewClient(t, p.Addr())
	adm := harness.NewAdmin(t, p.Addr())
	fillerID := harness.CreateTopic(t, adm, "filler", 1, nil)
	fullID := harness.CreateTopic(t, adm, "full", 1, nil)
	batch := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, Records: []harness.RawRecord{{Value: bytes.Repeat([]byte("x"), 512<<10)}}})
	for i := range 40 { // 20 MiB, freed by deleting the topic
		if sp := harness.ProduceRaw(t, cl, "filler", fillerID, 0, batch); sp.ErrorCode != 0 {
			t.Fatalf("produce %d to filler: %v", i, kerr.ErrorForCode(sp.ErrorCode))
		}
	}

	acked := 0
	var refused error
	var msg *string
	for range 400 {
		sp := harness.ProduceRaw(t, cl, "full", fullID, 0, batch)
		if sp.ErrorCode != 0 {
			refused, msg = kerr.ErrorForCode(sp.ErrorCode), sp.ErrorMessage
			break
		}
		acked++
	}
	if !errors.Is(refused, kerr.KafkaStorageError) {
		t.Fatalf("produce on a full disk after %d batches: %v, want KAFKA_STORAGE_ERROR", acked, refused)
	}
	t.Logf("disk full after %d batches of 512 KiB: %v: %s", acked, refused, strOr(msg))
	if got := len(harness.ReadAll(t, p.Addr(), "full")[0]); got != acked {
		t.Fatalf("read %d records back on a full disk, %d were acknowledged", got, acked)
	}

	waitFor(t, "the metadata store to refuse growth", func() bool { return metricValue(t, metrics, "strata_metadata_no_space") == 1 })
	created, err := adm.CreateTopic(testCtx(t), 1, 1, nil, "late")
	if !errors.Is(err, kerr.KafkaStorageError) || !strings.Contains(created.ErrMessage, "out of space") {
		t.Fatalf("create topic on a full disk: %v (%q), want KAFKA_STORAGE_ERROR saying the store is out of space", err, created.ErrMessage)
	}
	if !p.Running() {
		t.Fatal("the broker exited on a full disk")
	}
	// It stops cleanly and starts again on the full disk (etcd's reserve
	// holds its start and the broker's registration).
	p.Restart()
	if sp := harness.ProduceRaw(t, cl, "full", fullID, 0, batch); sp.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("produce after a restart on a full disk: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if got := len(harness.ReadAll(t, p.Addr(), "full")[0]); got != acked {
		t.Fatalf("read %d records back after the restart, %d were acknowledged", got, acked)
	}

	if _, err := adm.DeleteTopic(testCtx(t), "filler"); err != nil {
		t.Fatalf("delete a topic on a full disk: %v", err)
	}
	waitFor(t, "produces to succeed again", func() bool {
		return harness.ProduceRaw(t, cl, "full", fullID, 0, batch).ErrorCode == 0
	})
	waitFor(t, "the metadata store to take writes again", func() bool { return metricValue(t, metrics, "strata_metadata_no_space") == 0 })
	if _, err := adm.CreateTopic(testCtx(t), 1, 1, nil, "late"); err != nil {
		t.Fatalf("create topic after freeing space: %v", err)
	}
	if got := len(harness.ReadAll(t, p.Addr(), "full")[0]); got != acked+1 {
		t.Fatalf("read %d records, want %d", got, acked+1)
	}
}

// strOr is a message or a placeholder for none.
func strOr(s *string) string {
	if s == nil {
		return "<no message>"
	}
	return *s
}
