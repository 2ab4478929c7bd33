package harness

import (
	"fmt"
	"os"
	"strings"
)

// RSS is the broker process's resident set size in bytes (VmRSS in
// /proc/<pid>/status), for tests that bound its memory.
func (p *Process) RSS() int64 {
	p.t.Helper()
	n, err := vmRSS(p.Pid())
	if err != nil {
		p.t.Fatalf("harness: %v", err)
	}
	return n
}

// vmRSS reads VmRSS of process pid in bytes.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read status of pid %d: %w", pid, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				return 0, fmt.Errorf("parse VmRSS %q of pid %d: %w", v, pid, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in the status of pid %d", pid)
}
