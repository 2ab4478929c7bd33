//go:build !linux

package segment

import "os"

// datasync flushes f to stable storage; fdatasync(2) is Linux-only, so
// other systems use fsync.
func datasync(f *os.File) error { return f.Sync() }
