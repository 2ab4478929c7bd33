package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-broker/strata/tier/objstore"
	"github.com/strata-broker/strata/tier/objstore/localdir"
	"github.com/strata-broker/strata/tier/record"
)

// flakyStore fails every call while down is set, as an unreachable bucket.
type flakyStore struct {
	objstore.ObjectStore
	down      atomic.Bool
	puts      atomic.Int64 // successful puts; failAfter > 0 takes the store down after that many
	failAfter int64
}

func (s *flakyStore) check() error {
	if s.down.Load() {
		return fmt.Errorf("flaky: %w", objstore.ErrUnavailable)
	}
	return nil
}

func (s *flakyStore) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	if err := s.check(); err != nil {
		return err
	}
	if s.failAfter > 0 && s.puts.Add(1) > s.failAfter {
		s.down.Store(true)
		return fmt.Errorf("flaky: %w", objstore.ErrUnavailable)
	}
	return s.ObjectStore.Put(ctx, key, body, size)
}

func (s *flakyStore) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.ObjectStore.GetRange(ctx, key, off, n)
}

func newFlaky(t *testing.T) *flakyStore {
	s, err := localdir.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &flakyStore{ObjectStore: s}
}

// TestOutageMidCopyKeepsLocalAndResumes: the bucket fails in the middle of
// a copy; local segments stay, a cold read gets a retriable error, and once
// the bucket is back the interrupted copy is cleaned up and copying
// resumes with no gap or duplicate.
func TestOutageMidCopyKeepsLocalAndResumes(t *testing.T) {
	store := newFlaky(t)
	store.failAfter = 7 // the second copy fails half-way
	f := newFixture(t, store)
	f.produce(60)
	n := sealed(f)
	f.m.RunOnce(context.Background())
	if got := len(finished(f.records())); got != 1 {
		t.Fatalf("%d copies finished before the outage", got)
	}
	if sealed(f) != n-1 {
		t.Fatalf("%d sealed segments left, want %d (only the copied one deleted)", sealed(f), n-1)
	}
	if _, err := f.m.Reader().Read(context.Background(), f.id, 0, 0, 100); !errors.Is(err, objstore.ErrUnavailable) {
		t.Fatalf("cold read during the outage: %v", err)
	}

	store.down.Store(false)
	store.failAfter = 0
	f.m.RunOnce(context.Background())
	segs := f.records()
	fin := finished(segs)
	if len(fin) != n || sealed(f) != 0 {
		t.Fatalf("%d copies finished, %d local sealed, want %d and 0", len(fin), sealed(f), n)
	}
	for i := 1; i < len(fin); i++ {
		if fin[i].BaseOffset != fin[i-1].EndOffset+1 {
			t.Fatalf("gap or overlap at %d", fin[i].BaseOffset)
		}
	}
	for _, s := range segs {
		if s.State == CopyStarted || s.State == DeleteStarted {
			t.Fatalf("interrupted copy %s left in %s", s.Name(), s.State)
		}
	}
	f.readCold(f.m, 0)
}

func TestConcurrentColdReads(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(150)
	f.m.RunOnce(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for off := int64(0); off < f.log.LogStartOffset(); {
				s, err := f.m.Reader().Read(context.Background(), f.id, 0, off, 700)
				if err != nil {
					errs <- err
					return
				}
				buf := make([]byte, s.Len)
				_, err = s.ref.ReadAt(buf, s.Pos)
				s.Release()
				bs, serr := record.Split(buf)
				if err != nil || serr != nil || len(bs) == 0 {
					errs <- fmt.Errorf("at %d: %v %v", off, err, serr)
					return
				}
				for _, b := range bs {
					if !bytes.Equal(b, f.data[b.BaseOffset()]) {
						errs <- fmt.Errorf("batch %d differs", b.BaseOffset())
						return
					}
					off = b.LastOffset() + 1
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestStatusAndDeleteOnDisable(t *testing.T) {
	store := newFlaky(t)
	f := newFixture(t, store)
	f.produce(60)
	store.down.Store(true)
	f.m.RunOnce(context.Background())
	st := f.m.Status(f.id, 0)
	if st.CopyBacklog != sealed(f) || st.LastError == "" || st.RemoteCopies != 0 {
		t.Fatalf("status during an outage: %+v", st)
	}
	store.down.Store(false)
	f.m.RunOnce(context.Background())
	st = f.m.Status(f.id, 0)
	if st.CopyBacklog != 0 || st.LastError != "" || st.RemoteStart != 0 || st.RemoteCopies == 0 || st.RemoteBytes == 0 {
		t.Fatalf("status after recovery: %+v", st)
	}
	f.cfg.RemoteStorageEnable, f.cfg.RemoteLogDeleteOnDisable = false, true
	f.m.RunOnce(context.Background())
	if len(f.records()) != 0 || countKeys(t, store, ".log") != 0 {
		t.Fatalf("%d records, %d objects after delete on disable", len(f.records()), countKeys(t, store, ".log"))
	}
}
