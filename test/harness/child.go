package harness

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Child is a child process whose standard output and error are appended
// to a log file. The harness's broker and etcd processes are built on it;
// it needs no testing.TB, so benchmarks use it as well.
type Child struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process has been waited for
	waitErr error         // valid once exited is closed
}

// StartChild starts args[0] with the arguments args[1:], appending its
// output to logPath.
func StartChild(logPath string, args ...string) (*Child, error) {
	if len(args) == 0 {
		return nil, errors.New("harness: start child: no command")
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("harness: start %s: open log: %w", args[0], err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("harness: start %s: %w", args[0], err)
	}
	c := &Child{cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	return c, nil
}

// StartServe starts `bin serve` as a child for a benchmark program: a
// PLAINTEXT listener on a free loopback port, data in dir/data, output
// appended to dir/broker.log, no metrics or console listener, and each of
// keys ("name=value") set. It returns the child and its address once the
// broker answers Ping; if the broker exits first or timeout passes, it
// stops it and returns the error.
func StartServe(bin, dir string, timeout time.Duration, keys ...string) (*Child, string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("harness: free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("harness: broker dir: %w", err)
	}
	args := []string{bin, "serve", "--set", "listeners=PLAINTEXT://" + addr, "--set", "log.dirs=" + filepath.Join(dir, "data"),
		"--set", "metrics.listener=", "--set", "console.listener="}
	for _, k := range keys {
		args = append(args, "--set", k)
	}
	c, err := StartChild(filepath.Join(dir, "broker.log"), args...)
	if err != nil {
		return nil, "", err
	}
	if err := waitReady(addr, c.Exited(), timeout); err != nil {
		c.Stop(os.Interrupt, 20*time.Second)
		return nil, "", fmt.Errorf("harness: %w", err)
	}
	return c, addr, nil
}

// Running reports whether the process is alive as far as its Wait knows
// (false for a nil Child).
func (c *Child) Running() bool {
	if c == nil {
		return false
	}
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// Exited is closed once the process has exited and been waited for.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Err is the process's exit error (nil for a zero exit status), valid
// once Exited is closed.
func (c *Child) Err() error {
	<-c.exited
	return c.waitErr
}

// Pid is the process id while it runs, 0 otherwise.
func (c *Child) Pid() int {
	if !c.Running() {
		return 0
	}
	return c.cmd.Process.Pid
}

// Signal sends sig to the running process.
func (c *Child) Signal(sig os.Signal) error {
	if !c.Running() {
		return errors.New("harness: child process is not running")
	}
	return c.cmd.Process.Signal(sig)
}

// Stop sends sig and waits up to timeout for the process to exit, then
// kills it (SIGKILL) and waits for that; it reports whether it had to.
// Stopping a process that is not running does nothing.
func (c *Child) Stop(sig os.Signal, timeout time.Duration) (killed bool) {
	if !c.Running() {
		return false
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.exited:
		return false
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return true
	}
}

// Pause stops the process with SIGSTOP and returns once every thread has
// stopped (a signal is delivered asynchronously, and a thread still
// running could yet answer), or fails after timeout.
func (c *Child) Pause(timeout time.Duration) error {
	if err := c.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for !allStopped(c.Pid()) {
		if time.Now().After(deadline) {
			return fmt.Errorf("harness: pid %d not stopped %v after SIGSTOP", c.Pid(), timeout)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Resume continues a paused process (SIGCONT).
func (c *Child) Resume() error { return c.Signal(syscall.SIGCONT) }

// allStopped reports whether every thread of process pid is stopped
// (state T in /proc/pid/task/*/stat).
func allStopped(pid int) bool {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return false
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			return false // a thread that exited meanwhile: look again
		}
		// pid (comm) state ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}
