package segment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// txnIndexBytes encodes entries in the file layout.
func txnIndexBytes(entries ...AbortedTxn) []byte {
	buf := make([]byte, len(entries)*AbortedTxnSize)
	for i, a := range entries {
		a.encode(buf[i*AbortedTxnSize:])
	}
	return buf
}

func mustAppendTxn(t *testing.T, x *TxnIndex, entries ...AbortedTxn) {
	t.Helper()
	for _, a := range entries {
		if err := x.Append(a); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAbortedTxnLayout pins the byte layout to Kafka's AbortedTxn.
func TestAbortedTxnLayout(t *testing.T) {
	got := txnIndexBytes(AbortedTxn{ProducerID: 0x0102030405060708, FirstOffset: 9, LastOffset: 0x10, LastStableOffset: 0x11})
	want := []byte{
		0, 0,
		1, 2, 3, 4, 5, 6, 7, 8,
		0, 0, 0, 0, 0, 0, 0, 9,
		0, 0, 0, 0, 0, 0, 0, 0x10,
		0, 0, 0, 0, 0, 0, 0, 0x11,
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("layout\n got %x\nwant %x", got, want)
	}
}

func TestTxnIndexAppendAndReopen(t *testing.T) {
	dir := t.TempDir()
	path := FileName(dir, 100, TxnIndexSuffix)
	x := NewTxnIndex(path, 100)
	if err := x.Sync(); err != nil { // no file yet
		t.Fatal(err)
	}
	entries := []AbortedTxn{
		{ProducerID: 1, FirstOffset: 90, LastOffset: 105, LastStableOffset: 106},
		{ProducerID: 2, FirstOffset: 104, LastOffset: 110, LastStableOffset: 111},
		{ProducerID: 1, FirstOffset: 111, LastOffset: 120, LastStableOffset: 115},
	}
	mustAppendTxn(t, x, entries...)
	if err := x.Sync(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(data, txnIndexBytes(entries...)) {
		t.Fatalf("file %x, err %v", data, err)
	}
	for name, bad := range map[string]AbortedTxn{
		"last offset not increasing": {ProducerID: 3, FirstOffset: 115, LastOffset: 120, LastStableOffset: 121},
		"first after last":           {ProducerID: 3, FirstOffset: 130, LastOffset: 125, LastStableOffset: 126},
		"negative producer":          {ProducerID: -1, FirstOffset: 121, LastOffset: 125, LastStableOffset: 126},
		"negative lso":               {ProducerID: 3, FirstOffset: 121, LastOffset: 125, LastStableOffset: -1},
	} {
		if err := x.Append(bad); !errors.Is(err, ErrBadAbortedTxn) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := NewTxnIndex(filepath.Join(dir, "other"), 100).Append(AbortedTxn{ProducerID: 1, LastOffset: 99}); !errors.Is(err, ErrBadAbortedTxn) {
		t.Errorf("entry before the base: %v", err)
	}
	re, cut, err := OpenTxnIndex(path, 100)
	if err != nil || cut != 0 {
		t.Fatalf("reopen: cut %d, %v", cut, err)
	}
	if !slices.Equal(re.All(), entries) || re.SanityCheck() != nil {
		t.Fatalf("reopened %+v", re.All())
	}
	// A missing file is an empty index.
	empty, cut, err := OpenTxnIndex(filepath.Join(dir, "missing.txnindex"), 0)
	if err != nil || cut != 0 || empty.Len() != 0 {
		t.Fatalf("missing file: %d entries, cut %d, %v", empty.Len(), cut, err)
	}
}

// TestCollectAbortedTxns checks overlap with [fetchOffset, upperBound)
// and completeness by the LSO. The entries are what a log writes for:
// pid 0 aborts 0..10 while pid 1's transaction (from 5) is open, so the
// LSO after it is 5; pid 1 aborts 5..15 with nothing open (LSO 16); pid 2
// aborts 18..35 while pid 3's (from 32) is open (LSO 32); pid 3 aborts
// 32..50 (LSO 51).
func TestCollectAbortedTxns(t *testing.T) {
	x := NewTxnIndex(filepath.Join(t.TempDir(), "0.txnindex"), 0)
	a := AbortedTxn{ProducerID: 0, FirstOffset: 0, LastOffset: 10, LastStableOffset: 5}
	b := AbortedTxn{ProducerID: 1, FirstOffset: 5, LastOffset: 15, LastStableOffset: 16}
	c := AbortedTxn{ProducerID: 2, FirstOffset: 18, LastOffset: 35, LastStableOffset: 32}
	d := AbortedTxn{ProducerID: 3, FirstOffset: 32, LastOffset: 50, LastStableOffset: 51}
	mustAppendTxn(t, x, a, b, c, d)
	for _, tc := range []struct {
		fetch, upper int64
		want         []AbortedTxn
		complete     bool
	}{
		{0, 0, nil, true},                         // empty range; a's LSO ends the search
		{0, 5, []AbortedTxn{a}, true},             // b starts at the bound
		{0, 6, []AbortedTxn{a, b}, true},          // a's LSO 5 < 6, b's 16 ends it
		{11, 12, []AbortedTxn{b}, true},           // a ended before 11
		{16, 18, nil, true},                       // c starts at the bound; its LSO ends it
		{16, 19, []AbortedTxn{c}, true},           // b ended before 16
		{40, 45, []AbortedTxn{d}, true},           // d's LSO 51 ≥ 45
		{36, 60, []AbortedTxn{d}, false},          // no LSO reaches 60: go on to the next segment
		{51, 60, nil, false},                      // nothing ends at or after 51
		{0, 100, []AbortedTxn{a, b, c, d}, false}, // everything
	} {
		r := x.CollectAbortedTxns(tc.fetch, tc.upper)
		if !slices.Equal(r.Aborted, tc.want) || r.Complete != tc.complete {
			t.Errorf("collect [%d, %d): got %+v complete %v, want %+v complete %v",
				tc.fetch, tc.upper, r.Aborted, r.Complete, tc.want, tc.complete)
		}
	}
	if r := NewTxnIndex("unused", 0).CollectAbortedTxns(0, 10); r.Aborted != nil || r.Complete {
		t.Errorf("empty index: %+v", r)
	}
}

func TestTxnIndexTruncateAndReset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000000.txnindex")
	x := NewTxnIndex(path, 0)
	entries := []AbortedTxn{
		{ProducerID: 1, FirstOffset: 0, LastOffset: 10, LastStableOffset: 11},
		{ProducerID: 1, FirstOffset: 12, LastOffset: 20, LastStableOffset: 21},
		{ProducerID: 1, FirstOffset: 22, LastOffset: 30, LastStableOffset: 31},
	}
	mustAppendTxn(t, x, entries...)
	for _, tc := range []struct {
		to   int64
		keep int
	}{{40, 3}, {31, 3}, {30, 2}, {21, 2}, {20, 1}, {0, 0}} {
		y := NewTxnIndex(path, 0)
		if err := y.Reset(); err != nil {
			t.Fatal(err)
		}
		mustAppendTxn(t, y, entries...)
		if err := y.TruncateTo(tc.to); err != nil {
			t.Fatal(err)
		}
		re, _, err := OpenTxnIndex(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(y.All(), entries[:tc.keep]) || !slices.Equal(re.All(), entries[:tc.keep]) {
			t.Errorf("truncate to %d: memory %+v, file %+v", tc.to, y.All(), re.All())
		}
		// Appending after a truncation continues from the kept entries.
		if tc.keep < 3 {
			mustAppendTxn(t, y, entries[tc.keep])
		}
	}
	if err := x.Reset(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 0 || x.Len() != 0 {
		t.Fatalf("reset: %v %v", st, err)
	}
	mustAppendTxn(t, x, entries[0]) // anything goes after a reset
	// Rename then Delete.
	moved := path + ".swap"
	if err := x.Rename(moved); err != nil || x.Path() != moved {
		t.Fatal(err)
	}
	if err := x.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(moved); !os.IsNotExist(err) {
		t.Fatalf("file survived delete: %v", err)
	}
}

func TestOpenTxnIndexRecovers(t *testing.T) {
	good := []AbortedTxn{
		{ProducerID: 4, FirstOffset: 50, LastOffset: 110, LastStableOffset: 111},
		{ProducerID: 5, FirstOffset: 111, LastOffset: 130, LastStableOffset: 131},
	}
	badVersion := txnIndexBytes(AbortedTxn{ProducerID: 6, FirstOffset: 131, LastOffset: 140, LastStableOffset: 141})
	badVersion[1] = 1
	for name, tc := range map[string]struct {
		tail []byte
		keep int
	}{
		"clean":            {nil, 2},
		"torn entry":       {txnIndexBytes(AbortedTxn{ProducerID: 6, FirstOffset: 131, LastOffset: 140})[:20], 2},
		"unknown version":  {badVersion, 2},
		"not increasing":   {txnIndexBytes(AbortedTxn{ProducerID: 6, FirstOffset: 100, LastOffset: 130, LastStableOffset: 131}), 2},
		"zeroed tail":      {make([]byte, 3*AbortedTxnSize+5), 2},
		"before base only": {nil, 0},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.txnindex")
			base := int64(100)
			if name == "before base only" {
				base = 120
			}
			content := slices.Concat(txnIndexBytes(good...), tc.tail)
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			x, cut, err := OpenTxnIndex(path, base)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(x.All(), good[:tc.keep]) {
				t.Fatalf("kept %+v", x.All())
			}
			if want := int64(len(content) - tc.keep*AbortedTxnSize); cut != want {
				t.Fatalf("cut %d bytes, want %d", cut, want)
			}
			if st, _ := os.Stat(path); st.Size() != int64(tc.keep*AbortedTxnSize) {
				t.Fatalf("file is %d bytes", st.Size())
			}
			if err := x.SanityCheck(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// FuzzTxnIndexRecovery opens arbitrary bytes as a transaction index and
// checks that recovery keeps a prefix of whole, valid entries of the input,
// leaves the file equal to it, and is idempotent.
func FuzzTxnIndexRecovery(f *testing.F) {
	valid := txnIndexBytes(
		AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 10, LastStableOffset: 11},
		AbortedTxn{ProducerID: 2, FirstOffset: 3, LastOffset: 20, LastStableOffset: 21},
	)
	f.Add([]byte{}, int64(0))
	f.Add(valid, int64(0))
	f.Add(valid[:50], int64(5))
	f.Add(slices.Concat(valid, valid), int64(0))
	f.Add(bytes.Repeat([]byte{0xff}, 100), int64(0))
	f.Add(valid, int64(15))
	f.Fuzz(func(t *testing.T, content []byte, base int64) {
		path := filepath.Join(t.TempDir(), "f.txnindex")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		x, cut, err := OpenTxnIndex(path, base)
		if err != nil {
			t.Fatal(err)
		}
		kept := x.Len() * AbortedTxnSize
		if int64(kept)+cut != int64(len(content)) {
			t.Fatalf("kept %d + cut %d != %d", kept, cut, len(content))
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, content[:kept]) || !bytes.Equal(data, txnIndexBytes(x.All()...)) {
			t.Fatalf("file is not the kept prefix")
		}
		if err := x.SanityCheck(); err != nil {
			t.Fatal(err)
		}
		again, cut2, err := OpenTxnIndex(path, base)
		if err != nil || cut2 != 0 || !slices.Equal(again.All(), x.All()) {
			t.Fatalf("second recovery: cut %d, %v", cut2, err)
		}
		_ = x.CollectAbortedTxns(base, base+100)
	})
}

// TestCollectAcrossSegments: a transaction that starts in one segment and
// is aborted in a later one is found from the earlier segment's fetch,
// and the search stops at the first complete index.
func TestCollectAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	seg := func(base int64, entries ...AbortedTxn) *TxnIndex {
		x := NewTxnIndex(FileName(dir, base, TxnIndexSuffix), base)
		mustAppendTxn(t, x, entries...)
		return x
	}
	a := AbortedTxn{ProducerID: 1, FirstOffset: 5, LastOffset: 8, LastStableOffset: 9}
	b := AbortedTxn{ProducerID: 2, FirstOffset: 9, LastOffset: 25, LastStableOffset: 12} // started in segment 0
	c := AbortedTxn{ProducerID: 3, FirstOffset: 12, LastOffset: 28, LastStableOffset: 29}
	d := AbortedTxn{ProducerID: 4, FirstOffset: 30, LastOffset: 45, LastStableOffset: 46}
	segs := []*TxnIndex{seg(0, a), seg(10), seg(20, b, c), seg(40, d)}
	for _, tc := range []struct {
		from         int // index of the segment holding fetchOffset
		fetch, upper int64
		want         []AbortedTxn
		complete     bool
	}{
		{0, 0, 10, []AbortedTxn{a, b}, true},  // a's LSO 9 < 10; segment 10 has none; b's LSO 12 ≥ 10
		{0, 9, 12, []AbortedTxn{b}, true},     // a ended before 9
		{1, 10, 13, []AbortedTxn{b, c}, true}, // b's LSO 12 < 13, c's 29 ≥ 13
		{2, 26, 35, []AbortedTxn{c, d}, true}, // c overlaps 26..28, d 30..; d's LSO 46 ≥ 35
		{3, 46, 50, nil, false},               // indexes ran out
		{0, 0, 100, []AbortedTxn{a, b, c, d}, false},
	} {
		r := CollectAbortedTxns(slices.Values(segs[tc.from:]), tc.fetch, tc.upper)
		if !slices.Equal(r.Aborted, tc.want) || r.Complete != tc.complete {
			t.Errorf("from segment %d, [%d, %d): got %+v complete %v, want %+v complete %v",
				tc.from, tc.fetch, tc.upper, r.Aborted, r.Complete, tc.want, tc.complete)
		}
	}
}
