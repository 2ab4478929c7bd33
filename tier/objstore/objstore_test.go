package objstore

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestClampRange(t *testing.T) {
	cases := []struct {
		off, n, size, want int64
		err                bool
	}{
		{0, -1, 10, 10, false},
		{3, -1, 10, 7, false},
		{3, 4, 10, 4, false},
		{3, 100, 10, 7, false},
		{10, -1, 10, 0, false},
		{10, 5, 10, 0, false},
		{0, 0, 0, 0, false},
		{11, -1, 10, 0, true},
		{-1, 1, 10, 0, true},
		{0, -2, 10, 0, true},
	}
	for _, c := range cases {
		got, err := ClampRange(c.off, c.n, c.size)
		if (err != nil) != c.err || got != c.want || (err != nil && !errors.Is(err, ErrInvalidRange)) {
			t.Errorf("ClampRange(%d, %d, %d) = %d, %v", c.off, c.n, c.size, got, err)
		}
	}
}

func TestSizedBody(t *testing.T) {
	read := func(r io.Reader, err error) ([]byte, error) {
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	}
	// A seekable body is checked up front and read from its current offset.
	br := bytes.NewReader([]byte("0123456789"))
	br.Seek(4, io.SeekStart)
	if got, err := read(SizedBody(br, 6)); err != nil || string(got) != "456789" {
		t.Errorf("seekable from offset 4 = %q, %v", got, err)
	}
	if _, err := SizedBody(bytes.NewReader(make([]byte, 5)), 6); !errors.Is(err, ErrSizeMismatch) {
		t.Errorf("short seekable body error = %v", err)
	}
	stream := func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }
	if got, err := read(SizedBody(stream("abc"), 3)); err != nil || string(got) != "abc" {
		t.Errorf("exact stream = %q, %v", got, err)
	}
	if got, err := read(SizedBody(stream(""), 0)); err != nil || len(got) != 0 {
		t.Errorf("empty stream = %q, %v", got, err)
	}
	for _, c := range []struct {
		body string
		size int64
	}{{"ab", 3}, {"abcd", 3}, {"a", 0}} {
		if _, err := read(SizedBody(stream(c.body), c.size)); !errors.Is(err, ErrSizeMismatch) {
			t.Errorf("stream %q as %d bytes error = %v, want ErrSizeMismatch", c.body, c.size, err)
		}
	}
	if _, err := SizedBody(stream(""), -1); !errors.Is(err, ErrSizeMismatch) {
		t.Errorf("negative size error = %v", err)
	}
}

// FuzzValidateKey checks that every accepted key is a clean relative path
// strictly inside any root, which is what localdir relies on.
func FuzzValidateKey(f *testing.F) {
	for _, k := range []string{"a", "a/b", "../a", "a/../b", "/a", "a//b", ".", "a/.", "..a", "a\\..\\b", "\xff"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if ValidateKey(key) != nil {
			return
		}
		root := "/root/objects"
		p := filepath.Join(root, filepath.FromSlash(key))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("key %q maps to %q outside %q", key, p, root)
		}
		if filepath.ToSlash(strings.TrimPrefix(p, root+"/")) != key {
			t.Fatalf("key %q is not a clean path (%q)", key, p)
		}
	})
}
