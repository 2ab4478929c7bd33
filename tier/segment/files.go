package segment

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File name suffixes of a segment's files.
const (
	LogSuffix       = ".log"
	IndexSuffix     = ".index"
	TimeIndexSuffix = ".timeindex"
	TxnIndexSuffix  = ".txnindex"
)

// FileName is the path of the file with the given suffix of the segment
// starting at base: dir/<base as 20 zero-padded digits><suffix>.
func FileName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// ParseFileName splits a file name made by FileName into its base offset
// and suffix; ok is false for any other name.
func ParseFileName(name string) (base int64, suffix string, ok bool) {
	name = filepath.Base(name)
	dot := strings.IndexByte(name, '.')
	if dot != 20 {
		return 0, "", false
	}
	base, err := strconv.ParseInt(name[:dot], 10, 64)
	if err != nil || base < 0 {
		return 0, "", false
	}
	return base, name[dot:], true
}

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old or the new content: it writes a temporary file, fsyncs it, renames it
// over path and fsyncs the directory. Checkpoints and producer snapshots
// use it.
func WriteFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	err := writeSynced(tmp, data)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeSynced creates (or truncates) path, writes data and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDir fsyncs a directory, making file creations, renames and removals
// in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// removeIfExists removes path; a missing file is not an error.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// datasync is the sync used for segment files; tests that do not exercise
// durability (the fuzz target) swap in a no-op to run faster.
var datasync = fdatasync
