package segment

import (
	"os"
	"testing"
)

func TestFileSuffixAndRename(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, 100, Options{FileSuffix: ".cleaned", IndexIntervalBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	want := fill(t, s, 20)
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.LogPath(), s.IndexPath(), s.TimeIndexPath()} {
		if _, err := os.Stat(p); err != nil || p[len(p)-len(".cleaned"):] != ".cleaned" {
			t.Fatalf("staged file %s: %v", p, err)
		}
	}
	if _, err := os.Stat(FileName(dir, 100, LogSuffix)); !os.IsNotExist(err) {
		t.Fatalf("plain name exists before the rename: %v", err)
	}
	if err := s.RenameSuffix(".swap"); err != nil {
		t.Fatal(err)
	}
	if err := s.RenameSuffix(""); err != nil {
		t.Fatal(err)
	}
	if s.FileSuffix() != "" || s.LogPath() != FileName(dir, 100, LogSuffix) {
		t.Fatalf("after rename: suffix %q, path %s", s.FileSuffix(), s.LogPath())
	}
	// Still readable through the open files, and reopens under the plain name.
	sl, err := s.Read(want[5].BaseOffset(), 1, -1)
	if err != nil || len(sliceBatches(t, sl)) != 1 {
		t.Fatalf("read after rename: %v", err)
	}
	sl.Release()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(dir, 100, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	if re.NextOffset() != want[len(want)-1].LastOffset()+1 {
		t.Fatalf("reopened next offset %d", re.NextOffset())
	}
	// Renaming a missing file fails and leaves the suffix alone.
	if err := os.Remove(re.TimeIndexPath()); err != nil {
		t.Fatal(err)
	}
	if err := re.RenameSuffix(".x"); err == nil {
		t.Fatal("rename with a missing file succeeded")
	}
	if _, err := os.Stat(re.IndexPath()); re.FileSuffix() != "" || err != nil {
		t.Fatalf("after failed rename: suffix %q, index %v", re.FileSuffix(), err)
	}
}

func TestDeleteRemovesSuffixedFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, 0, Options{FileSuffix: ".cleaned"})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, 3)
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("%d files left", len(entries))
	}
}
