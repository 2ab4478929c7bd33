package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// profiler records CPU, allocation, block and mutex profiles of one
// measure (-profile DIR): everything in this process runs during it, the
// clients as well as the in-process broker.
type profiler struct {
	dir, name string
	cpu       *os.File
}

// startProfile starts profiling into dir under the given name; a nil
// profiler (dir "") does nothing.
func startProfile(dir, name string) (*profiler, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: profile dir: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(fmt.Errorf("bench: cpu profile: %w", err), f.Close())
	}
	runtime.SetBlockProfileRate(1000) // one event per µs blocked
	runtime.SetMutexProfileFraction(1)
	runtime.MemProfileRate = 4096
	return &profiler{dir: dir, name: name, cpu: f}, nil
}

// stop ends the profiles and writes them.
func (p *profiler) stop() error {
	if p == nil {
		return nil
	}
	pprof.StopCPUProfile()
	errs := []error{p.cpu.Close()}
	for _, kind := range []string{"allocs", "block", "mutex"} {
		errs = append(errs, p.write(kind))
	}
	runtime.SetBlockProfileRate(0)
	runtime.SetMutexProfileFraction(0)
	return errors.Join(errs...)
}

func (p *profiler) write(kind string) error {
	f, err := os.Create(filepath.Join(p.dir, p.name+"."+kind+".pprof"))
	if err != nil {
		return fmt.Errorf("bench: %s profile: %w", kind, err)
	}
	if err := pprof.Lookup(kind).WriteTo(f, 0); err != nil {
		return errors.Join(fmt.Errorf("bench: %s profile: %w", kind, err), f.Close())
	}
	return f.Close()
}
