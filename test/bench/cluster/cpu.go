package main

import (
	"fmt"
	"time"

	"github.com/strata-broker/strata/perf"
)

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
		if pid := b.child.Pid(); pid != 0 {
			s.brokers += perf.ProcessCPU(pid)
		}
	}
	s.client = perf.SelfCPU()
	return s
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
