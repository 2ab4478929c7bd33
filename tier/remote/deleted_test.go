package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/objstore"
	"github.com/strata-broker/strata/tier/objstore/localdir"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/remote"
)

// TestDeletedTopicSweep: a tiered topic is copied to a local-directory
// store with its records in the metadata store, then deleted. The sweep waits
// while this broker still holds the partition, then deletes every object
// under the topic's prefix and every remote record; a late object (a copy
// in flight at deletion time) is removed by a later pass, the marker only
// after the grace, and a second broker sweeping too changes nothing. A
// re-created topic of the same name is not affected.
func TestDeletedTopicSweep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	st := memstore.New()
	defer st.Close()
	one := map[int32]metadata.PartitionState{0: {Replicas: []int32{1}, Leader: 1, ISR: []int32{1}}}
	topic := metadata.Topic{Name: "gone", Configs: map[string]string{"remote.storage.enable": "true"}, Partitions: one}
	if _, err := st.CreateTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	created, _ := st.Cache().Topic("gone")
	id := created.ID

	lg, err := local.Open(t.TempDir(), local.Config{SegmentBytes: 4096, IndexIntervalBytes: 256}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	for i := range 60 {
		b := record.NewBatch(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli()},
			record.Record{Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte{byte(i)}, 300)})
		if _, err := lg.AppendAsLeader([]record.Batch{b}, local.AppendOptions{Now: time.Now().UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	store, err := localdir.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Bool
	held.Store(true)
	src := func() []remote.PartitionInfo {
		if !held.Load() {
			return nil
		}
		return []remote.PartitionInfo{{
			Topic: "gone", TopicID: id, Log: lg, Leader: true, HighWatermark: lg.LogEndOffset(),
			Config: &config.Topic{RemoteStorageEnable: true, RetentionMs: -1, RetentionBytes: -1, LocalRetentionMs: -2, LocalRetentionBytes: -1},
		}}
	}
	var now atomic.Int64
	now.Store(time.Now().UnixMilli())
	opts := remote.Options{Interval: time.Hour, OrphanGrace: time.Minute, Logger: quiet,
		Now: func() time.Time { return time.UnixMilli(now.Load()) }}
	m, err := remote.New(store, st, src, opts)
	if err != nil {
		t.Fatal(err)
	}
	m.RunOnce(ctx)
	prefix := fmt.Sprintf("gone-%x/", id[:])
	if n := countObjects(t, store, prefix); n < 10 {
		t.Fatalf("%d objects copied", n)
	}
	// A copy interrupted by the deletion: COPY_STARTED, no objects yet.
	if err := st.PutRemoteSegment(ctx, id, 0, "99999999999999999999-00000000000000aa", []byte(`{"state":"COPY_STARTED"}`), 0); err != nil {
		t.Fatal(err)
	}

	if _, err := st.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := st.PutRemoteSegment(ctx, id, 0, "late", []byte("{}"), 0); !errors.Is(err, metadata.ErrRemoteTopicDeleted) {
		t.Fatalf("record write after deletion: %v", err)
	}
	sw := remote.NewSweeper(m, st)
	if err := sw.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, store, prefix); n < 10 {
		t.Fatalf("objects deleted while the replica is still held: %d left", n)
	}

	held.Store(false) // the partition manager dropped the replica
	if err := sw.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, store, prefix); n != 0 {
		t.Fatalf("%d objects left after the sweep", n)
	}
	if names, _, err := st.ListRemoteSegments(ctx, id, 0); err != nil || len(names) != 0 {
		t.Fatalf("remote records left: %v %v", names, err)
	}
	if ids, _, err := st.ListDeletedTopics(ctx); err != nil || len(ids) != 1 {
		t.Fatalf("marker forgotten before the grace: %v %v", ids, err)
	}

	// A late upload of the in-flight copy; the next pass removes it.
	late := prefix + "0/00000000000000000000-00000000000000aa.log"
	if err := store.Put(ctx, late, strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	now.Add(time.Minute.Milliseconds())
	if err := sw.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, store, prefix); n != 0 {
		t.Fatalf("late object left: %d", n)
	}
	other := remote.NewSweeper(m, st) // a second broker racing
	for _, s := range []*remote.Sweeper{other, sw} {
		if err := s.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ids, _, err := st.ListDeletedTopics(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("marker kept after a clean sweep past the grace: %v %v", ids, err)
	}

	// Same name, new incarnation: a new id whose writes are accepted.
	if _, err := st.CreateTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	again, _ := st.Cache().Topic("gone")
	if again.ID == id {
		t.Fatal("re-created topic kept its id")
	}
	if err := st.PutRemoteSegment(ctx, again.ID, 0, "x", []byte("{}"), 0); err != nil {
		t.Fatal(err)
	}
}

func countObjects(t *testing.T, s objstore.ObjectStore, prefix string) int {
	t.Helper()
	n := 0
	for _, err := range s.List(context.Background(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
