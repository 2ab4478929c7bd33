package partition

import (
	"errors"
	"log/slog"
	"math"
	"testing"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

func TestNewBudget(t *testing.T) {
	for _, c := range []struct {
		name      string
		keys      map[string]string
		openFiles uint64
		want      Budget
	}{
		{name: "4096 files", openFiles: 4096,
			want: Budget{OpenFiles: 4096, Reserve: 1024, SegmentFiles: 1024, MaxPartitions: 1024, FilesAllow: 1024}},
		{name: "20000 files", openFiles: 20000,
			want: Budget{OpenFiles: 20000, Reserve: 5000, SegmentFiles: 5000, MaxPartitions: 5000, FilesAllow: 5000}},
		{name: "max.broker.partitions lowers it", openFiles: 4096, keys: map[string]string{"max.broker.partitions": "300"},
			want: Budget{OpenFiles: 4096, Reserve: 1024, SegmentFiles: 1024, MaxPartitions: 300, FilesAllow: 1024}},
		{name: "but cannot raise it", openFiles: 4096, keys: map[string]string{"max.broker.partitions": "5000"},
			want: Budget{OpenFiles: 4096, Reserve: 1024, SegmentFiles: 1024, MaxPartitions: 1024, FilesAllow: 1024}},
		{name: "a smaller segment file cache leaves more", openFiles: 4096, keys: map[string]string{"log.segment.open.files.max": "24"},
			want: Budget{OpenFiles: 4096, Reserve: 1024, SegmentFiles: 24, MaxPartitions: 1524, FilesAllow: 1524}},
		{name: "a tiny limit keeps the reserve", openFiles: 128,
			want: Budget{OpenFiles: 128, Reserve: 64, SegmentFiles: 32, MaxPartitions: 16, FilesAllow: 16}},
		{name: "nothing left still allows one", openFiles: 4096, keys: map[string]string{"log.segment.open.files.max": "4000"},
			want: Budget{OpenFiles: 4096, Reserve: 1024, SegmentFiles: 4000, MaxPartitions: 1, FilesAllow: 0}},
		{name: "unlimited", openFiles: math.MaxUint64,
			want: Budget{OpenFiles: math.MaxInt32, Reserve: math.MaxInt32 / 4, SegmentFiles: math.MaxInt32 / 4, MaxPartitions: 536870912, FilesAllow: 536870912}},
		{name: "unknown", openFiles: 0,
			want: Budget{SegmentFiles: 1024, MaxPartitions: math.MaxInt32, FilesAllow: math.MaxInt32}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse(c.keys)
			if err != nil {
				t.Fatal(err)
			}
			if got := NewBudget(cfg, c.openFiles); got != c.want {
				t.Fatalf("NewBudget(%d) = %+v, want %+v", c.openFiles, got, c.want)
			}
		})
	}
}

// TestManagerPartitionLimit: beyond max.broker.partitions a partition is
// not opened and the others are served; room freed by a deleted topic is
// used by the next sync.
func TestManagerPartitionLimit(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"log.dirs": t.TempDir(), "max.broker.partitions": "3"})
	if err != nil {
		t.Fatal(err)
	}
	cache := metadata.NewCache()
	m, err := NewManager(config.NewLive(cfg), cache, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Budget().MaxPartitions != 3 {
		t.Fatalf("limit %d, want 3", m.Budget().MaxPartitions)
	}
	cache.Load(1, append(topicChanges("a", metadata.NewTopicID(), nil, 2), topicChanges("b", metadata.NewTopicID(), nil, 2)...))
	err = m.Sync()
	if !errors.Is(err, ErrPartitionLimit) {
		t.Fatalf("Sync over the limit: %v, want ErrPartitionLimit", err)
	}
	if n := len(m.All()); n != 3 {
		t.Fatalf("%d partitions open, want 3", n)
	}
	if _, ok := m.Get("b", 1); ok {
		t.Fatal("b-1 opened beyond the limit")
	}
	// Deleting a frees room: b-1 opens, in the same sync.
	cache.Apply(2, []metadata.Change{{Kind: metadata.ChangeTopic, Topic: "a", Delete: true}})
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Get("b", 1); !ok || len(m.All()) != 2 {
		t.Fatalf("after deleting a: %d partitions, b-1 open %v", len(m.All()), ok)
	}
}
