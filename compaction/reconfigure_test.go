package compaction

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

// TestServiceFollowsDynamicConfig: a change of the cleaner's dynamic
// settings replaces the cleaner (threads and their share of the dedupe
// buffer), which then cleans; other changes keep it.
func TestServiceFollowsDynamicConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		static, err := config.Parse(map[string]string{"log.cleaner.backoff.ms": "3600000", "log.cleaner.dedupe.buffer.size": "8388608"})
		if err != nil {
			t.Fatal(err)
		}
		live := config.NewLive(static)
		cache := metadata.NewCache()
		rev := int64(1)
		setDynamic := func(kv map[string]string) {
			rev++
			cache.Apply(rev, []metadata.Change{{Kind: metadata.ChangeBrokerConfigs, Entity: metadata.ClusterDefault, Configs: kv}})
			live.Refresh(cache, 1)
			synctest.Wait()
		}
		cmp := newPart(t, 1024, compactCfg("min.cleanable.dirty.ratio", "0.1"))
		svc := New(live, source(cmp), slog.New(slog.DiscardHandler))
		first := svc.Cleaner()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { svc.Run(ctx); close(done) }()

		setDynamic(map[string]string{"log.retention.ms": "1000"}) // not the cleaner's
		if svc.Cleaner() != first {
			t.Fatal("a change of other keys replaced the cleaner")
		}
		setDynamic(map[string]string{"log.cleaner.threads": "2"})
		second := svc.Cleaner()
		if second == first || second.MapCapacity() >= first.MapCapacity() {
			t.Fatalf("cleaner not replaced with two threads' shares: capacity %d, before %d", second.MapCapacity(), first.MapCapacity())
		}
		// The new cleaner cleans.
		for i := range 100 {
			appendKV(t, cmp.l, record.None, kv{key: key(i % 5), value: []byte("v"), ts: nowMs()})
		}
		roll(t, cmp)
		for i := 0; cmp.l.CleanerPoint().FirstDirtyOffset == 0; i++ {
			if i == 100 {
				t.Fatal("the reconfigured cleaner did not clean")
			}
			time.Sleep(time.Hour) // the threads' backoff
		}
		cancel()
		<-done
	})
}
