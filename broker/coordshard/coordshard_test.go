package coordshard

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type testShard struct {
	Shard
	items map[string]int
}

var (
	errClosed  = errors.New("closed")
	errNotLed  = errors.New("not led")
	errLoading = errors.New("loading")
)

// TestTableLifecycle elects, loads (after one failed read), finds,
// resigns and closes, checking each answer the table gives.
func TestTableLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fail := true
		var unloaded []int32
		var tb *Table[*testShard]
		tb = New(Config[*testShard]{
			Topic: "__t", Name: "test",
			Errors: Errors{NotAvailable: errClosed, NotCoordinator: errNotLed, LoadInProgress: errLoading},
			New:    func() *testShard { return &testShard{} },
			Load: func(sh *testShard, start time.Time) error {
				if fail {
					fail = false
					return errors.New("read failed")
				}
				tb.Publish(sh, start, func() { sh.items = map[string]int{"a": 1} })
				return nil
			},
			Unload: func(sh *testShard) { unloaded = append(unloaded, sh.Index) },
		})
		find := func() (err error) {
			tb.View(func(l Locked[*testShard]) { _, err = l.Find(func(int32) int32 { return 0 }) })
			return err
		}
		if err := find(); !errors.Is(err, errNotLed) {
			t.Fatalf("no topic: %v", err)
		}
		tb.SetPartitionCount(1)
		tb.Elect(0, 3, nil)
		if err := find(); !errors.Is(err, errLoading) {
			t.Fatalf("loading: %v", err)
		}
		synctest.Wait()
		if tb.Loaded(0) {
			t.Fatal("loaded after a failed read")
		}
		time.Sleep(loadRetry)
		synctest.Wait()
		if !tb.Loaded(0) || find() != nil {
			t.Fatalf("not loaded after the retry: %v", find())
		}
		if led := tb.Led(); led[0] != 3 || len(led) != 1 {
			t.Fatalf("led %v", led)
		}
		items, loading := Collect(tb, func(sh *testShard) map[string]int { return sh.items })
		if len(items) != 1 || items[0] != 1 || loading {
			t.Fatalf("collect: %v %v", items, loading)
		}
		if s := tb.Loads(); s.Count != 1 || s.Max != loadRetry {
			t.Fatalf("load stats %+v", s)
		}
		tb.Elect(0, 3, nil) // same epoch and log: nothing happens
		tb.Resign(0)
		if err := find(); !errors.Is(err, errNotLed) || len(unloaded) != 1 {
			t.Fatalf("resigned: %v, unloaded %v", err, unloaded)
		}
		tb.Elect(1, 0, nil)
		synctest.Wait()
		tb.Close()
		if err := find(); !errors.Is(err, errClosed) || len(unloaded) != 2 {
			t.Fatalf("closed: %v, unloaded %v", err, unloaded)
		}
	})
}
