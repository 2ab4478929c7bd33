package broker

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv names the environment variable that makes a test of this file
// play the child process its parent test runs.
const childEnv = "STRATA_BROKER_TEST_CHILD"

// childCmd is this test binary, running only test name as the child.
func childCmd(t *testing.T, name string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.timeout=5m", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	return cmd
}

func isChild(name string) bool { return os.Getenv(childEnv) == name }

// TestFDLimitRaisedAtStart: a broker started with its soft limit of open
// files below the hard limit raises it to the hard limit and logs both.
// The limit is the process's, so a child process does it.
func TestFDLimitRaisedAtStart(t *testing.T) {
	if !isChild(t.Name()) {
		out, err := childCmd(t, t.Name()).CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 256 {
		t.Skipf("hard limit of open files %d: too low to lower", lim.Max)
	}
	lowered := syscall.Rlimit{Cur: lim.Max / 2, Max: lim.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	var rec recordLog
	serve(t, nil, &rec)
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur != lim.Max {
		t.Fatalf("soft limit %d after start, want the hard limit %d", lim.Cur, lim.Max)
	}
	logged := rec.messages("open file limit")
	if len(logged) != 1 {
		t.Fatalf("%d lines logged about the limit, want 1", len(logged))
	}
	want := map[string]string{"soft": fmt.Sprint(lim.Max), "hard": fmt.Sprint(lim.Max), "soft.before": fmt.Sprint(lowered.Cur)}
	for k, v := range want {
		if got := attr(logged[0], k); got != v {
			t.Errorf("logged %s=%s, want %s", k, got, v)
		}
	}
}

// TestAcceptRetriesWhenOutOfFileDescriptors: a broker whose process runs
// out of file descriptors (its soft limit lowered to what it has open
// plus a few) fails to accept connections (EMFILE) but keeps running:
// it retries, and accepts the waiting connections as others close. The
// broker runs in a child process, so that the limit binds only it; this
// test is its client.
func TestAcceptRetriesWhenOutOfFileDescriptors(t *testing.T) {
	if isChild(t.Name()) {
		acceptUnderFDLimit(t)
		return
	}
	cmd := childCmd(t, t.Name())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var output bytes.Buffer
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(io.TeeReader(stdout, &output))
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	exited := false
	defer func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("child's output:\n%s%s", output.String(), stderr.String())
		}
	}()
	awaitLine := func(what string, match func(string) bool) string {
		t.Helper()
		timeout := time.After(runTimeout)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("child ended before %s", what)
				}
				if match(l) {
					return l
				}
			case <-timeout:
				t.Fatalf("timed out waiting for the child's %s", what)
			}
		}
	}
	addr := strings.TrimPrefix(awaitLine("address", func(l string) bool { return strings.HasPrefix(l, "ADDR ") }), "ADDR ")

	const conns = 12
	answered := make(chan *kconn, conns)
	for range conns {
		k := dial(t, addr, "")
		req := pingRequest()
		k.send(req)
		go func() {
			if _, err := k.recv(runTimeout); err == nil {
				answered <- k
			} else {
				answered <- nil
			}
		}()
	}
	l := awaitLine("accept failure", func(l string) bool {
		return strings.Contains(l, "too many open files") || strings.Contains(l, "broker part failed")
	})
	if !strings.Contains(l, "accept failed; retrying") {
		t.Fatalf("the broker did not retry: %s", l)
	}
	// Each connection closed frees a descriptor for one waiting to be
	// accepted.
	for i := range conns {
		k := <-answered
		if k == nil {
			t.Fatalf("connection %d of %d not answered", i+1, conns)
		}
		k.c.Close()
	}
	stdin.Close() // the child stops its broker
	awaitLine("clean stop", func(l string) bool { return l == "STOPPED" })
	exited = true
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// acceptUnderFDLimit is the child of
// TestAcceptRetriesWhenOutOfFileDescriptors: it runs a broker, leaves it
// room for a few more descriptors, prints its address, and stops it once
// its stdin closes.
func acceptUnderFDLimit(t *testing.T) {
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r := startServerLogging(t, testConfig(t, t.TempDir(), map[string]string{
		"remote.log.storage.system.enable": "false", "metrics.listener": "", "console.listener": "",
	}), log)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	fds := len(openFDs(t))
	low := syscall.Rlimit{Cur: uint64(fds + 4), Max: lim.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	fmt.Println("ADDR " + r.s.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		t.Fatalf("broker stopped by itself: %v", err)
	default:
	}
	r.cancel()
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	fmt.Println("STOPPED")
	fmt.Println("open file limit in the child was " + strconv.FormatUint(low.Cur, 10))
}
