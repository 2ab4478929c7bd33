//go:build !linux

package segment

import "os"

// fdatasync flushes f to stable storage; fdatasync(2) is Linux-only, so
// other systems use fsync.
func fdatasync(f *os.File) error { return f.Sync() }
