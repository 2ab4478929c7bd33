package harness

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDir  string // temp dir holding the built binary; removed by Main
	binPath   string
	buildErr  error
)

// Main runs the package's tests and then removes the strata binary built
// for them. Call it from TestMain: func TestMain(m *testing.M) { harness.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// Binary returns the path of the strata binary, building ./cmd/strata of
// this module the first time it is called in the test binary's life.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { binPath, buildErr = build() })
	if buildErr != nil {
		t.Fatalf("harness: %v", buildErr)
	}
	return binPath
}

// build builds the binary Binary returns into a new temp dir, buildDir.
func build() (string, error) {
	var err error
	buildDir, err = os.MkdirTemp("", "strata-e2e-bin-")
	if err != nil {
		return "", fmt.Errorf("build strata: temp dir: %w", err)
	}
	return BuildStrata(buildDir)
}

// BuildStrata builds this module's ./cmd/strata into dir and returns the
// binary's path, for benchmark programs that run brokers as processes
// (tests call Binary, which builds once per test binary).
func BuildStrata(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "strata")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = "/usr/local/go/bin/go"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", out, "./cmd/strata")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/strata in %s: %w\n%s", root, err, msg)
	}
	return out, nil
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Process is a Strata broker running as a child process of the real binary.
type Process struct {
	t         testing.TB
	dir       string
	confPath  string
	logPath   string
	overrides map[string]string
	addr      string
	child     *Child // the running (or last) broker process
	launched  time.Time
	wrapper   []string // command the broker runs under (SetWrapper)
	tailShown bool
}

// StartProcess builds the binary if needed, writes a properties file with
// BaseConfig on a free loopback port and a data directory in t.TempDir(),
// starts `strata serve --config FILE --set k=v…` with overrides as --set
// flags, and waits until the broker answers. The process is stopped when the
// test ends.
func StartProcess(t testing.TB, overrides map[string]string) *Process {
	t.Helper()
	return StartProcessUnder(t, nil, overrides)
}

// StartProcessUnder is StartProcess with the broker run under wrapper (see
// SetWrapper).
func StartProcessUnder(t testing.TB, wrapper []string, overrides map[string]string) *Process {
	t.Helper()
	p := launchUnder(t, wrapper, overrides)
	p.WaitReady(startTimeout)
	return p
}

// LaunchProcess is StartProcess without the wait: the broker process runs,
// ready or not (e.g. waiting for an etcd not started yet); WaitReady waits.
func LaunchProcess(t testing.TB, overrides map[string]string) *Process {
	t.Helper()
	return launchUnder(t, nil, overrides)
}

// launchUnder is LaunchProcess with the broker run under wrapper.
func launchUnder(t testing.TB, wrapper []string, overrides map[string]string) *Process {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	port := FreePort(t)
	p := &Process{
		t:         t,
		dir:       dir,
		confPath:  filepath.Join(dir, "server.properties"),
		logPath:   filepath.Join(dir, "broker.log"),
		overrides: maps.Clone(overrides),
		addr:      "127.0.0.1:" + strconv.Itoa(port),
		wrapper:   slices.Clone(wrapper),
	}
	var conf strings.Builder
	base := BaseConfig(filepath.Join(dir, "data"), port)
	for _, k := range slices.Sorted(maps.Keys(base)) {
		fmt.Fprintf(&conf, "%s=%s\n", k, base[k])
	}
	if err := os.WriteFile(p.confPath, []byte(conf.String()), 0o644); err != nil {
		t.Fatalf("harness: write broker config: %v", err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() && !p.tailShown {
			p.tailShown = true
			t.Logf("broker process log tail (%s):\n%s", p.logPath, logTail(p.logPath, 60))
		}
	})
	p.launch(bin)
	return p
}

// Addr is the host:port of the broker's Kafka listener (stable across restarts).
func (p *Process) Addr() string { return p.addr }

// Dir is the broker's data directory (log.dirs).
func (p *Process) Dir() string { return filepath.Join(p.dir, "data") }

// Running reports whether the process is alive as far as the harness knows.
func (p *Process) Running() bool { return p.child.Running() }

// LogPath is the broker's log file (every run of the process appends).
func (p *Process) LogPath() string { return p.logPath }

// Log is the broker's log so far.
func (p *Process) Log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		p.t.Fatalf("harness: read broker log: %v", err)
	}
	return string(b)
}

// SetWrapper makes the next start run the broker under wrapper, a command
// that execs its arguments (such as prlimit --nofile=N:N --), so that it
// starts with the wrapper's limits; none runs it directly.
func (p *Process) SetWrapper(wrapper ...string) { p.wrapper = wrapper }

// launch starts the broker process without waiting for it.
func (p *Process) launch(bin string) {
	p.t.Helper()
	args := []string{"serve", "--config", p.confPath}
	for _, k := range slices.Sorted(maps.Keys(p.overrides)) {
		args = append(args, "--set", k+"="+p.overrides[k])
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatalf("harness: open process log: %v", err)
	}
	fmt.Fprintf(logf, "=== harness: %s %s ===\n", bin, strings.Join(args, " "))
	logf.Close()
	cmd := append(append(slices.Clone(p.wrapper), bin), args...)
	child, err := StartChild(p.logPath, cmd...)
	if err != nil {
		p.t.Fatalf("%v", err)
	}
	p.child, p.launched = child, time.Now()
}

// WaitReady waits until the broker answers (ApiVersions and Metadata),
// failing the test if it exits or timeout passes first.
func (p *Process) WaitReady(timeout time.Duration) {
	p.t.Helper()
	if err := waitReady(p.addr, p.child.Exited(), timeout); err != nil {
		p.t.Fatalf("harness: %v\nbroker log:\n%s", err, logTail(p.logPath, 40))
	}
	p.t.Logf("harness: broker pid %d ready at %s after %v", p.child.Pid(), p.addr, time.Since(p.launched).Round(time.Millisecond))
}

// Exited is closed when the broker process has exited.
func (p *Process) Exited() <-chan struct{} { return p.child.Exited() }

// Err waits for the broker process to exit and returns its exit error
// (nil for status 0).
func (p *Process) Err() error { return p.child.Err() }

// Kill9 sends SIGKILL to the broker and waits for it to die.
func (p *Process) Kill9() {
	p.t.Helper()
	if !p.Running() {
		p.t.Fatalf("harness: Kill9 on a broker process that is not running")
	}
	if err := p.child.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatalf("harness: SIGKILL broker pid %d: %v", p.child.Pid(), err)
	}
	<-p.child.Exited()
}

// Stop sends SIGTERM and waits for a clean exit, failing the test if the
// broker exits non-zero or needs SIGKILL after 30 s. Stopping a dead
// process does nothing.
func (p *Process) Stop() {
	p.t.Helper()
	if !p.Running() {
		return
	}
	pid := p.child.Pid()
	if err := p.child.Signal(syscall.SIGTERM); err != nil {
		p.t.Errorf("harness: SIGTERM broker pid %d: %v", pid, err)
	}
	select {
	case <-p.child.Exited():
		if err := p.child.Err(); err != nil {
			p.t.Errorf("harness: broker process exited after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		p.t.Errorf("harness: broker pid %d ignored SIGTERM for 30s; killing it", pid)
		p.child.Stop(syscall.SIGKILL, startTimeout)
	}
}

// Restart stops the broker if it is still running (cleanly) and starts it
// again on the same configuration, directories and port.
func (p *Process) Restart() {
	p.t.Helper()
	p.Stop()
	p.launch(Binary(p.t))
	p.WaitReady(startTimeout)
}

// Pause stops the broker process with SIGSTOP (it keeps its sockets but
// answers nothing, so its etcd lease runs out) and returns once every
// thread has stopped. Resume continues it. A paused process is resumed
// before it is stopped at test end.
func (p *Process) Pause() {
	p.t.Helper()
	if err := p.child.Pause(OpTimeout); err != nil {
		p.t.Fatalf("harness: pause broker: %v", err)
	}
	child := p.child
	p.t.Cleanup(func() { _ = child.Resume() })
}

// Resume sends SIGCONT to a paused broker.
func (p *Process) Resume() {
	p.t.Helper()
	if err := p.child.Resume(); err != nil {
		p.t.Fatalf("harness: resume broker: %v", err)
	}
}

// Pid is the process id of the running broker (0 when it is not running).
func (p *Process) Pid() int { return p.child.Pid() }
