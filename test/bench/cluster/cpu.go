package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's utime and stime (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpuSample is the CPU time used so far by the brokers and by this process
// (the producer clients).
type cpuSample struct {
	brokers, client time.Duration
	at              time.Time
}

// cpu samples the CPU time of c's running brokers and of this process.
func (c *cluster) cpu() cpuSample {
	s := cpuSample{at: time.Now()}
	for _, b := range c.brokers {
		if b.running() {
			s.brokers += procCPU(b.cmd.Process.Pid)
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s
}

// procCPU is the user+system CPU time of process pid (0 if unreadable).
func procCPU(pid int) time.Duration {
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

// cpuUse describes the CPU spent between two samples for mb megabytes
// produced: cores busy on average and milliseconds per MB, brokers and
// clients apart.
func cpuUse(from, to cpuSample, mb float64) string {
	wall := to.at.Sub(from.at).Seconds()
	br, cl := (to.brokers - from.brokers).Seconds(), (to.client - from.client).Seconds()
	if wall <= 0 || mb <= 0 {
		return "cpu: n/a"
	}
	return fmt.Sprintf("cpu: brokers %.2f cores (%.2f ms/MB), clients %.2f cores (%.2f ms/MB)",
		br/wall, br*1000/mb, cl/wall, cl*1000/mb)
}
