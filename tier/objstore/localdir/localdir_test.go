package localdir

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-broker/strata/tier/objstore"
	"github.com/strata-broker/strata/tier/objstore/objstoretest"
)

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.ObjectStore {
		s, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestLayoutAndPruning(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.Put(ctx, "a/b/c.log", strings.NewReader("xyz"), 3); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "objects", "a", "b", "c.log"))
	if err != nil || string(got) != "xyz" {
		t.Fatalf("object file = %q, %v", got, err)
	}
	if tmps, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(tmps) != 0 {
		t.Fatalf("temp files left after Put: %v", tmps)
	}
	// A key cannot be both an object and a directory of other keys.
	if err := s.Put(ctx, "a/b", strings.NewReader("x"), 1); err == nil {
		t.Fatal("Put of a key that is a directory of other keys succeeded")
	}
	if err := s.Put(ctx, "a/b/c.log/d", strings.NewReader("x"), 1); err == nil {
		t.Fatal("Put below an object succeeded")
	}
	if err := s.Delete(ctx, "a/b/c.log"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "objects", "a")); !os.IsNotExist(err) {
		t.Fatalf("empty parent directories not pruned: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
		t.Fatalf("objects root removed: %v", err)
	}
}

func TestStaleTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(dir); err != nil {
		t.Fatal(err)
	}
	stale, fresh := filepath.Join(dir, "tmp", "put-stale"), filepath.Join(dir, "tmp", "put-fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTmpAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temp file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("fresh temp file (a Put in progress) removed: %v", err)
	}
}

// TestPutDeleteRace interleaves Puts into a directory with Deletes that prune
// it, exercising the rename retry.
func TestPutDeleteRace(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			if err := s.Delete(ctx, "x/y/a"); err != nil {
				t.Errorf("Delete: %v", err)
				return
			}
		}
	}()
	for i := range 100 {
		data := bytes.Repeat([]byte{byte(i)}, 10)
		if err := s.Put(ctx, "x/y/b", bytes.NewReader(data), 10); err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
		if err := s.Put(ctx, "x/y/a", bytes.NewReader(data), 10); err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
		if err := s.Delete(ctx, "x/y/b"); err != nil {
			t.Fatalf("Delete %d: %v", i, err)
		}
	}
	<-done
}

func TestNewErrors(t *testing.T) {
	if _, err := New(""); err == nil {
		t.Fatal("New(\"\") succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(file); err == nil {
		t.Fatal("New over a regular file succeeded")
	}
}
