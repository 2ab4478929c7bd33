package perf

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's utime and stime (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// ProcessCPU is the user+system CPU time used so far by process pid (0 if
// unreadable, e.g. not on Linux); benchmarks use it to report CPU per MB
// of the servers they start.
func ProcessCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields count from its closing ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 { // f[0] is field 3 (state); utime, stime are fields 14, 15
		return 0
	}
	u, _ := strconv.ParseInt(string(f[11]), 10, 64)
	s, _ := strconv.ParseInt(string(f[12]), 10, 64)
	return time.Duration(u+s) * clockTick
}

// SelfCPU is the user+system CPU time used so far by this process.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
