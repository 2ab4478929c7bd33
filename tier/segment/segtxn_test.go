package segment

import (
	"os"
	"testing"
)

// The transaction index follows its segment through renames, truncation,
// reopening, re-creation and deletion.
func TestSegmentKeepsTxnIndex(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, 100, Options{FileSuffix: ".cleaned"})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, 20)
	for _, last := range []int64{105, 110, 115} {
		if err := s.AppendAbortedTxn(AbortedTxn{ProducerID: 7, FirstOffset: last - 3, LastOffset: last, LastStableOffset: last + 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendAbortedTxn(AbortedTxn{ProducerID: 7, FirstOffset: 100, LastOffset: 112}); err == nil {
		t.Fatal("an entry ending before the previous one was accepted")
	}
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.RenameSuffix(""); err != nil {
		t.Fatal(err)
	}
	plain := FileName(dir, 100, TxnIndexSuffix)
	if s.TxnIndexPath() != plain || s.TxnIndex().Path() != plain {
		t.Fatalf("txn index at %s / %s, want %s", s.TxnIndexPath(), s.TxnIndex().Path(), plain)
	}
	if st, err := os.Stat(plain); err != nil || st.Size() != 3*AbortedTxnSize {
		t.Fatalf("txn index file after rename: %v %v", st, err)
	}
	if _, err := s.TruncateTo(110); err != nil {
		t.Fatal(err)
	}
	if n := s.TxnIndex().Len(); n != 1 {
		t.Fatalf("%d entries after truncating to 110, want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, 100, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.TxnIndex().All(); len(got) != 1 || got[0].LastOffset != 105 {
		t.Fatalf("reopened index %+v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Create replaces a stale index; Delete removes it.
	s, err = Create(dir, 100, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(plain); !os.IsNotExist(err) {
		t.Fatalf("stale txn index survived Create: %v", err)
	}
	fill(t, s, 2)
	if err := s.AppendAbortedTxn(AbortedTxn{ProducerID: 1, FirstOffset: 100, LastOffset: 101}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(plain); !os.IsNotExist(err) {
		t.Fatalf("txn index survived Delete: %v", err)
	}
}

// Open drops the entries of markers past the log end (the log lost its
// tail).
func TestOpenCutsTxnEntriesPastLogEnd(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, 4)
	next := s.NextOffset()
	if err := s.AppendAbortedTxn(AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAbortedTxn(AbortedTxn{ProducerID: 1, FirstOffset: 2, LastOffset: next + 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.TxnIndex().All(); len(got) != 1 || got[0].LastOffset != 1 {
		t.Fatalf("entries after reopening %+v", got)
	}
}
