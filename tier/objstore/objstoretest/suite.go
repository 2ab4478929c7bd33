package objstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-broker/strata/tier/objstore"
)

// Option adjusts Run.
type Option func(*options)

type options struct {
	largeSize int64
}

// LargeObjectSize sets the size of the large-object subtest (default 1 MiB).
// Set it above the backend's multipart part size to exercise multipart
// uploads; ranges across part boundaries of 5 MiB (S3's minimum part size)
// are checked too when the object is big enough.
func LargeObjectSize(n int64) Option { return func(o *options) { o.largeSize = n } }

// Run runs the conformance suite. newStore must return a fresh, empty store
// for each call (a new directory, a new bucket or a new key prefix) and
// arrange its cleanup with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) objstore.ObjectStore, opts ...Option) {
	o := options{largeSize: 1 << 20}
	for _, opt := range opts {
		opt(&o)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s objstore.ObjectStore)
	}{
		{"PutGet", testPutGet},
		{"GetRange", testGetRange},
		{"Missing", testMissing},
		{"Overwrite", testOverwrite},
		{"List", testList},
		{"Delete", testDelete},
		{"InvalidKeys", testInvalidKeys},
		{"SizeMismatch", testSizeMismatch},
		{"FailingBody", testFailingBody},
		{"Canceled", testCanceled},
		{"PutFile", testPutFile},
		{"Large", func(t *testing.T, s objstore.ObjectStore) { testLarge(t, s, o.largeSize) }},
		{"Concurrent", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func testPutGet(t *testing.T, s objstore.ObjectStore) {
	ctx := t.Context()
	for i, size := range []int{0, 1, 4097} {
		key := fmt.Sprintf("topic-abc/%d/%020d-copy.log", i, i*100)
		data := pseudoRandom(uint64(i), size)
		start := time.Now()
		mustPut(t, s, key, data)
		got := mustGet(t, s, key, 0, -1)
		if !bytes.Equal(got, data) {
			t.Fatalf("get %q: %d bytes differ from the %d put", key, len(got), len(data))
		}
		info, err := s.Head(ctx, key)
		if err != nil {
			t.Fatalf("head %q: %v", key, err)
		}
		if info.Key != key || info.Size != int64(size) {
			t.Fatalf("head %q = %+v, want key %q size %d", key, info, key, size)
		}
		if d := info.ModTime.Sub(start); d < -time.Hour || d > time.Hour {
			t.Fatalf("head %q: mod time %v is far from now %v", key, info.ModTime, start)
		}
	}
}

func testGetRange(t *testing.T, s objstore.ObjectStore) {
	data := pseudoRandom(7, 1000)
	mustPut(t, s, "r/full", data)
	mustPut(t, s, "r/empty", nil)
	cases := []struct {
		key    string
		off, n int64
		want   []byte // nil with wantErr
		err    error
	}{
		{"r/full", 0, -1, data, nil},
		{"r/full", 0, 1000, data, nil},
		{"r/full", 0, 5000, data, nil},
		{"r/full", 10, 20, data[10:30], nil},
		{"r/full", 999, -1, data[999:], nil},
		{"r/full", 999, 5, data[999:], nil},
		{"r/full", 500, 0, []byte{}, nil},
		{"r/full", 1000, -1, []byte{}, nil},
		{"r/full", 1000, 10, []byte{}, nil},
		{"r/full", 1001, -1, nil, objstore.ErrInvalidRange},
		{"r/full", 2000, 1, nil, objstore.ErrInvalidRange},
		{"r/full", -1, 1, nil, objstore.ErrInvalidRange},
		{"r/full", 0, -2, nil, objstore.ErrInvalidRange},
		{"r/empty", 0, -1, []byte{}, nil},
		{"r/empty", 0, 5, []byte{}, nil},
		{"r/empty", 0, 0, []byte{}, nil},
		{"r/empty", 1, -1, nil, objstore.ErrInvalidRange},
	}
	for _, c := range cases {
		got, err := get(t.Context(), s, c.key, c.off, c.n)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("GetRange(%q, %d, %d) error = %v, want %v", c.key, c.off, c.n, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("GetRange(%q, %d, %d): %v", c.key, c.off, c.n, err)
		} else if !bytes.Equal(got, c.want) {
			t.Errorf("GetRange(%q, %d, %d) = %d bytes, want %d (equal content)", c.key, c.off, c.n, len(got), len(c.want))
		}
	}
}

func testMissing(t *testing.T, s objstore.ObjectStore) {
	ctx := t.Context()
	mustPut(t, s, "present/a", []byte("a"))
	for _, key := range []string{"absent", "present/b", "present/a/below", "present"} {
		for _, r := range [][2]int64{{0, -1}, {0, 0}, {5, 10}} {
			if _, err := get(ctx, s, key, r[0], r[1]); !errors.Is(err, objstore.ErrNotExist) {
				t.Errorf("GetRange(%q, %d, %d) error = %v, want ErrNotExist", key, r[0], r[1], err)
			}
		}
		if _, err := s.Head(ctx, key); !errors.Is(err, objstore.ErrNotExist) {
			t.Errorf("Head(%q) error = %v, want ErrNotExist", key, err)
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) of an absent key: %v", key, err)
		}
	}
	if keys := listKeys(t, s, "absent"); len(keys) != 0 {
		t.Errorf("List(absent) = %q, want nothing", keys)
	}
}

func testOverwrite(t *testing.T, s objstore.ObjectStore) {
	v1, v2 := pseudoRandom(1, 100), pseudoRandom(2, 50)
	mustPut(t, s, "o/key", v1)
	mustPut(t, s, "o/key", v2)
	if got := mustGet(t, s, "o/key", 0, -1); !bytes.Equal(got, v2) {
		t.Fatalf("after overwrite got %d bytes, want the second version (%d bytes)", len(got), len(v2))
	}
	info, err := s.Head(t.Context(), "o/key")
	if err != nil || info.Size != 50 {
		t.Fatalf("Head after overwrite = %+v, %v; want size 50", info, err)
	}
	if keys := listKeys(t, s, ""); !slices.Equal(keys, []string{"o/key"}) {
		t.Fatalf("List after overwrite = %q, want [o/key]", keys)
	}
	// The same bytes again: Put is idempotent.
	mustPut(t, s, "o/key", v2)
	if got := mustGet(t, s, "o/key", 0, -1); !bytes.Equal(got, v2) {
		t.Fatalf("after repeated put got %d bytes, want %d", len(got), len(v2))
	}
}

// listKeysSorted is the key set of testList in lexical order. It mixes
// names that sort differently as whole keys than as path segments ('-' and
// '.' sort before '/').
var listKeysSorted = []string{
	"t/x",
	"t/x-1.5",
	"t/x-1/0/00000000000000000000-a.index",
	"t/x-1/0/00000000000000000000-a.log",
	"t/x-1/0/00000000000000000100-b.log",
	"t/x-1/1/00000000000000000000-c.log",
	"t/x-10/0/00000000000000000000-d.log",
	"t/x_",
	"u/y",
	"z",
}

func testList(t *testing.T, s objstore.ObjectStore) {
	for i, k := range slices.Backward(listKeysSorted) { // put out of order
		mustPut(t, s, k, pseudoRandom(uint64(i), i+1))
	}
	sizes := map[string]int64{}
	for obj, err := range s.List(t.Context(), "") {
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		sizes[obj.Key] = obj.Size
	}
	for i, k := range slices.Backward(listKeysSorted) {
		if sizes[k] != int64(i+1) {
			t.Errorf("List size of %q = %d, want %d", k, sizes[k], i+1)
		}
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", listKeysSorted},
		{"t/", listKeysSorted[:8]},
		{"t/x-1", listKeysSorted[1:7]},
		{"t/x-1/", listKeysSorted[2:6]},
		{"t/x-1/0/", listKeysSorted[2:5]},
		{"t/x-1/0/00000000000000000000-a.", listKeysSorted[2:4]},
		{"t/x-1/0/00000000000000000000-a.log", listKeysSorted[3:4]},
		{"t/x-1/0/00000000000000000000-a.log/", nil},
		{"t/x-", listKeysSorted[1:7]},
		{"u", listKeysSorted[8:9]},
		{"z", listKeysSorted[9:]},
		{"nothing/", nil},
		{"t/x-2", nil},
	}
	for _, c := range cases {
		if got := listKeys(t, s, c.prefix); !slices.Equal(got, c.want) {
			t.Errorf("List(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
	// Stopping early is allowed and yields no more.
	n := 0
	for _, err := range s.List(t.Context(), "t/") {
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("early-stopped List yielded %d, want 2", n)
	}
}

func testDelete(t *testing.T, s objstore.ObjectStore) {
	ctx := t.Context()
	keys := []string{"d/a/1", "d/a/2", "d/b/1", "d/c"}
	for _, k := range keys {
		mustPut(t, s, k, []byte(k))
	}
	if err := s.Delete(ctx, "d/a/1"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Head(ctx, "d/a/1"); !errors.Is(err, objstore.ErrNotExist) {
		t.Fatalf("Head after Delete error = %v, want ErrNotExist", err)
	}
	if _, err := get(ctx, s, "d/a/1", 0, -1); !errors.Is(err, objstore.ErrNotExist) {
		t.Fatalf("GetRange after Delete error = %v, want ErrNotExist", err)
	}
	if got := listKeys(t, s, ""); !slices.Equal(got, keys[1:]) {
		t.Fatalf("List after Delete = %q, want %q", got, keys[1:])
	}
	for _, k := range []string{"d/a/1", "d/a/1", "no/such/key", "d"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%q) of an absent key: %v", k, err)
		}
	}
	// Emptying a "directory" and writing into it again works.
	for _, k := range keys[1:] {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%q): %v", k, err)
		}
	}
	if got := listKeys(t, s, ""); len(got) != 0 {
		t.Fatalf("List after deleting everything = %q", got)
	}
	mustPut(t, s, "d/a/1", []byte("again"))
	if got := mustGet(t, s, "d/a/1", 0, -1); string(got) != "again" {
		t.Fatalf("re-put after delete = %q", got)
	}
}

func testInvalidKeys(t *testing.T, s objstore.ObjectStore) {
	ctx := t.Context()
	bad := []string{"", "/a", "a/", "a//b", ".", "..", "./a", "a/./b", "a/..", "../a",
		"a\x00b", "a\nb", "\xff", strings.Repeat("k", objstore.MaxSegmentLen+1),
		strings.Repeat(strings.Repeat("k", 99)+"/", objstore.MaxKeyLen/100) + "abcdefghijklmnopqrstuvwxyz"}
	for _, k := range bad {
		if err := s.Put(ctx, k, strings.NewReader("x"), 1); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Put(%q) error = %v, want ErrInvalidKey", k, err)
		}
		if _, err := get(ctx, s, k, 0, -1); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("GetRange(%q) error = %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Head(ctx, k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Head(%q) error = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Delete(ctx, k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Delete(%q) error = %v, want ErrInvalidKey", k, err)
		}
	}
	if got := listKeys(t, s, ""); len(got) != 0 {
		t.Fatalf("invalid keys stored something: %q", got)
	}
	// Unusual but valid keys work (the long one leaves room for a prefix).
	longest := strings.Repeat(strings.Repeat("k", 99)+"/", 7) + strings.Repeat("x", objstore.MaxSegmentLen)
	for _, k := range []string{longest, "sp ace/ü/%2F/a+b=c", "..a/b..", ".hidden"} {
		mustPut(t, s, k, []byte(k))
		if got := mustGet(t, s, k, 0, -1); string(got) != k {
			t.Errorf("get %q = %q", k, got)
		}
	}
}

func testSizeMismatch(t *testing.T, s objstore.ObjectStore) {
	ctx := t.Context()
	old := []byte("old version")
	mustPut(t, s, "m/existing", old)
	bodies := []struct {
		name string
		body func([]byte) io.Reader
	}{
		{"stream", func(b []byte) io.Reader { return onlyReader{bytes.NewReader(b)} }},
		{"seekable", func(b []byte) io.Reader { return bytes.NewReader(b) }},
	}
	for _, b := range bodies {
		for _, key := range []string{"m/new-" + b.name, "m/existing"} {
			if err := s.Put(ctx, key, b.body(make([]byte, 5)), 10); !errors.Is(err, objstore.ErrSizeMismatch) {
				t.Errorf("%s Put(%q) of a short body error = %v, want ErrSizeMismatch", b.name, key, err)
			}
			if err := s.Put(ctx, key, b.body(make([]byte, 10)), 5); !errors.Is(err, objstore.ErrSizeMismatch) {
				t.Errorf("%s Put(%q) of a long body error = %v, want ErrSizeMismatch", b.name, key, err)
			}
		}
		if _, err := s.Head(ctx, "m/new-"+b.name); !errors.Is(err, objstore.ErrNotExist) {
			t.Errorf("failed Put left an object: Head error = %v", err)
		}
	}
	if err := s.Put(ctx, "m/neg", strings.NewReader(""), -1); err == nil {
		t.Error("Put with size -1 succeeded")
	}
	if got := mustGet(t, s, "m/existing", 0, -1); !bytes.Equal(got, old) {
		t.Fatalf("failed Puts changed the existing object to %q", got)
	}
}

var errInjected = errors.New("objstoretest: injected read failure")

func testFailingBody(t *testing.T, s objstore.ObjectStore) {
	ctx := t.Context()
	mustPut(t, s, "f/existing", []byte("old"))
	for _, key := range []string{"f/new", "f/existing"} {
		body := io.MultiReader(bytes.NewReader(make([]byte, 3000)), failingReader{})
		if err := s.Put(ctx, key, body, 6000); !errors.Is(err, errInjected) {
			t.Errorf("Put(%q) with a failing body error = %v, want the body's error", key, err)
		}
	}
	if _, err := s.Head(ctx, "f/new"); !errors.Is(err, objstore.ErrNotExist) {
		t.Errorf("failed Put left an object: Head error = %v", err)
	}
	if got := mustGet(t, s, "f/existing", 0, -1); string(got) != "old" {
		t.Fatalf("failed Put changed the existing object to %q", got)
	}
}

func testCanceled(t *testing.T, s objstore.ObjectStore) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Put(ctx, "c/before", strings.NewReader("x"), 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a canceled context error = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	body := io.MultiReader(bytes.NewReader(make([]byte, 100)), cancelingReader{cancel})
	if err := s.Put(ctx, "c/during", body, 200); err == nil {
		t.Error("Put canceled while reading the body succeeded")
	}
	for _, key := range []string{"c/before", "c/during"} {
		if _, err := s.Head(t.Context(), key); !errors.Is(err, objstore.ErrNotExist) {
			t.Errorf("canceled Put left %q: Head error = %v", key, err)
		}
	}
}

func testPutFile(t *testing.T, s objstore.ObjectStore) {
	data := pseudoRandom(3, 10_000)
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutFile(t.Context(), s, "p/seg.log", path); err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	if got := mustGet(t, s, "p/seg.log", 0, -1); !bytes.Equal(got, data) {
		t.Fatalf("PutFile stored %d bytes, want the file's %d", len(got), len(data))
	}
	if err := objstore.PutFile(t.Context(), s, "p/missing", filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("PutFile of a missing file error = %v", err)
	}
}
