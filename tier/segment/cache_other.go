//go:build !linux

package segment

import "os"

// startWriteback does nothing where sync_file_range(2) is missing.
func startWriteback(*os.File, int64, int64) {}

// dropCache does nothing where posix_fadvise(2) is missing.
func dropCache(*os.File, int64, int64) {}
