package localdir

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/strata-broker/strata/tier/objstore"
)

const (
	objectsDir = "objects"
	tmpDir     = "tmp"
	tmpPattern = "put-*"
	// staleTmpAge is how old a temp file must be for New to remove it as
	// the leftover of a crashed Put rather than a Put still running.
	staleTmpAge = time.Hour
	// renameAttempts bounds the retries of a Put whose fresh parent
	// directory a concurrent Delete pruned before the rename.
	renameAttempts = 8
)

// Store is an objstore.ObjectStore over a directory. Create it with New.
type Store struct {
	root    string // absolute directory given to New
	objects string // root/objects
	tmp     string // root/tmp
}

var _ objstore.ObjectStore = (*Store)(nil)

// New opens (creating it if needed) the store rooted at dir and removes
// temp files that crashed Puts left there.
func New(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("localdir: empty directory")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localdir: open %s: %w", dir, err)
	}
	s := &Store{root: root, objects: filepath.Join(root, objectsDir), tmp: filepath.Join(root, tmpDir)}
	for _, d := range []string{s.objects, s.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("localdir: open %s: %w", dir, err)
		}
	}
	s.removeStaleTemps()
	return s, nil
}

// Dir returns the directory the store was opened at.
func (s *Store) Dir() string { return s.root }

func (s *Store) removeStaleTemps() {
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		slog.Warn("localdir: list temp files", "dir", s.tmp, "err", err)
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < staleTmpAge {
			continue
		}
		if err := os.Remove(filepath.Join(s.tmp, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("localdir: remove stale temp file", "file", e.Name(), "err", err)
		}
	}
}

// path maps a valid key to its file. ValidateKey has ruled out "..", empty
// segments and absolute keys, so the result is always inside s.objects.
func (s *Store) path(key string) string {
	return filepath.Join(s.objects, filepath.FromSlash(key))
}

// absent reports whether err means that no object exists at a path: the file
// is missing or a parent is a regular file (the key of another object).
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// Put implements objstore.ObjectStore: temp file, fsync, rename, fsync dir.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64) (err error) {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("localdir: put: %w", err)
	}
	r, err := objstore.SizedBody(body, size)
	if err != nil {
		return fmt.Errorf("localdir: put %q: %w", key, err)
	}
	f, err := os.CreateTemp(s.tmp, tmpPattern)
	if err != nil {
		return fmt.Errorf("localdir: put %q: %w", key, err)
	}
	installed := false
	defer func() {
		if !installed {
			f.Close() // a second Close after success below is harmless
			if rerr := os.Remove(f.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				slog.Warn("localdir: remove temp file", "file", f.Name(), "err", rerr)
			}
		}
	}()
	if _, err := io.Copy(f, &ctxReader{ctx: ctx, r: r}); err != nil {
		return fmt.Errorf("localdir: put %q: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("localdir: put %q: sync: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("localdir: put %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("localdir: put %q: %w", key, err)
	}
	if err := s.install(key, f.Name()); err != nil {
		return fmt.Errorf("localdir: put %q: %w", key, err)
	}
	installed = true
	return nil
}

// install renames the finished temp file to the key's path, creating the
// parent directories, and makes the rename durable.
func (s *Store) install(key, tmpName string) error {
	target := s.path(key)
	for attempt := 1; ; attempt++ {
		err := s.mkdirs(key)
		if err == nil {
			err = os.Rename(tmpName, target)
		}
		if err == nil {
			return syncDir(filepath.Dir(target))
		}
		// ENOENT: a concurrent Delete pruned a parent we just created.
		if !errors.Is(err, fs.ErrNotExist) || attempt == renameAttempts {
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EEXIST) {
				return fmt.Errorf("key collides with a directory of other keys or an object on its path: %w", err)
			}
			return err
		}
	}
}

// mkdirs creates the parent directories of key's file, fsyncing the parent
// of each one it creates so that the new entry survives a crash.
func (s *Store) mkdirs(key string) error {
	segs := strings.Split(key, "/")
	dir := s.objects
	for _, seg := range segs[:len(segs)-1] {
		parent := dir
		dir = filepath.Join(dir, seg)
		err := os.Mkdir(dir, 0o755)
		switch {
		case err == nil:
			if err := syncDir(parent); err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
		default:
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// GetRange implements objstore.ObjectStore. The reader holds the open file,
// so it keeps reading the version it opened even if the key is replaced.
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("localdir: get: %w", err)
	}
	if err := objstore.CheckRange(off, n); err != nil {
		return nil, fmt.Errorf("localdir: get %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("localdir: get %q: %w", key, err)
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		if absent(err) {
			return nil, fmt.Errorf("localdir: get %q: %w", key, objstore.ErrNotExist)
		}
		return nil, fmt.Errorf("localdir: get %q: %w", key, err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = objstore.ErrNotExist // a directory of other keys
	}
	if err == nil {
		n, err = objstore.ClampRange(off, n, st.Size())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("localdir: get %q: %w", key, err)
	}
	return &fileRange{SectionReader: io.NewSectionReader(f, off, n), f: f}, nil
}

// fileRange is the reader GetRange returns: a section of an open file.
type fileRange struct {
	*io.SectionReader
	f *os.File
}

func (r *fileRange) Close() error { return r.f.Close() }

// Head implements objstore.ObjectStore.
func (s *Store) Head(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("localdir: head: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("localdir: head %q: %w", key, err)
	}
	st, err := os.Stat(s.path(key))
	if err == nil && !st.Mode().IsRegular() {
		err = objstore.ErrNotExist
	} else if err != nil && absent(err) {
		err = objstore.ErrNotExist
	}
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("localdir: head %q: %w", key, err)
	}
	return objstore.ObjectInfo{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// List implements objstore.ObjectStore. It walks only the directory named by
// prefix up to its last '/', visiting each directory's entries in the order
// of the keys below them (a directory "d" sorts as "d/"), which is the
// lexical order of whole keys without sorting more than one directory at a
// time.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[objstore.ObjectInfo, error] {
	return func(yield func(objstore.ObjectInfo, error) bool) {
		dir := prefix[:strings.LastIndexByte(prefix, '/')+1] // "" or "a/b/"
		if dir != "" && objstore.ValidateKey(strings.TrimSuffix(dir, "/")) != nil {
			return // no valid key starts with prefix
		}
		s.walk(ctx, dir, prefix, yield)
	}
}

// walk yields the objects under directory dir ("" or ending in '/') whose
// keys start with prefix; it returns false once the caller stopped or an
// error was yielded.
func (s *Store) walk(ctx context.Context, dir, prefix string, yield func(objstore.ObjectInfo, error) bool) bool {
	entries, err := os.ReadDir(filepath.Join(s.objects, filepath.FromSlash(dir)))
	if err != nil {
		if absent(err) {
			return true // nothing there (or pruned by a concurrent Delete)
		}
		yield(objstore.ObjectInfo{}, fmt.Errorf("localdir: list %q: %w", prefix, err))
		return false
	}
	sortKey := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return cmp.Compare(sortKey(a), sortKey(b)) })
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			yield(objstore.ObjectInfo{}, fmt.Errorf("localdir: list %q: %w", prefix, err))
			return false
		}
		key := dir + sortKey(e)
		switch {
		case e.IsDir():
			if (strings.HasPrefix(key, prefix) || strings.HasPrefix(prefix, key)) && !s.walk(ctx, key, prefix, yield) {
				return false
			}
		case e.Type().IsRegular() && strings.HasPrefix(key, prefix):
			info, err := e.Info()
			if absent(err) {
				continue // deleted since ReadDir
			}
			if err != nil {
				yield(objstore.ObjectInfo{}, fmt.Errorf("localdir: list %q: %w", prefix, err))
				return false
			}
			if !yield(objstore.ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()}, nil) {
				return false
			}
		}
	}
	return true
}

// Delete implements objstore.ObjectStore: unlink, prune the parent
// directories that became empty, fsync the surviving parent.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("localdir: delete: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("localdir: delete %q: %w", key, err)
	}
	target := s.path(key)
	st, err := os.Lstat(target)
	if err != nil {
		if absent(err) {
			return nil
		}
		return fmt.Errorf("localdir: delete %q: %w", key, err)
	}
	if st.IsDir() {
		return nil // a directory of other keys, not an object
	}
	if err := os.Remove(target); err != nil && !absent(err) {
		return fmt.Errorf("localdir: delete %q: %w", key, err)
	}
	dir := filepath.Dir(target)
	for dir != s.objects && os.Remove(dir) == nil { // fails once not empty
		dir = filepath.Dir(dir)
	}
	if err := syncDir(dir); err != nil && !absent(err) {
		return fmt.Errorf("localdir: delete %q: %w", key, err)
	}
	return nil
}

// ctxReader stops a copy when its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
