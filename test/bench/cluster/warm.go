package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// warmPageCache writes and deletes a file of gib GiB in dir, so that the
// page-cache pages the runs write into have been touched once. On a VM the
// first touch of a page costs several times a reuse (doc/perf.md), which
// would otherwise weigh on whichever run first grows the page cache — RF=3
// writes three times the bytes of RF=1. A long-running server's memory is
// long touched.
func warmPageCache(dir string, gib int) error {
	if gib <= 0 {
		return nil
	}
	path := filepath.Join(dir, "warm.bin")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("warm page cache: %w", err)
	}
	defer os.Remove(path)
	buf := make([]byte, 4<<20)
	start := time.Now()
	for range gib << 8 {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return fmt.Errorf("warm page cache: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("warm page cache: %w", err)
	}
	fmt.Printf("page cache warmed: wrote and deleted %d GiB in %.1fs\n", gib, time.Since(start).Seconds())
	return nil
}
