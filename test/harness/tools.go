package harness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Paths of the external clients. Debian's python3-kafka and
// python3-confluent-kafka are installed for the system interpreter only, so
// a pyenv python3 on PATH would not do.
const (
	KcatPath    = "/usr/bin/kcat"
	PythonPath  = "/usr/bin/python3"
	toolTimeout = 60 * time.Second
)

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("harness: find free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Kcat runs kcat with args and returns its standard output. The test fails
// if kcat is missing, exits non-zero or runs longer than a minute.
func Kcat(t testing.TB, args ...string) string {
	t.Helper()
	return KcatStdin(t, "", args...)
}

// KcatStdin is Kcat with stdin fed from in (for `kcat -P`).
func KcatStdin(t testing.TB, in string, args ...string) string {
	t.Helper()
	requireFile(t, KcatPath, "kcat (apt-get install kcat)")
	return runTool(t, in, KcatPath, args...)
}

var (
	pythonMu      sync.Mutex
	pythonModules = map[string]error{} // module -> whether /usr/bin/python3 imports it
)

// Python runs script with /usr/bin/python3 -c, passing args as sys.argv[1:],
// and returns its standard output. The test fails if python3 or its kafka
// module (kafka-python) is missing, or the script fails or times out.
func Python(t testing.TB, script string, args ...string) string {
	t.Helper()
	return pythonWith(t, "kafka", "python3-kafka", script, args...)
}

// PythonConfluent is Python for scripts using confluent-kafka-python
// (librdkafka) instead of kafka-python.
func PythonConfluent(t testing.TB, script string, args ...string) string {
	t.Helper()
	return pythonWith(t, "confluent_kafka", "python3-confluent-kafka", script, args...)
}

// pythonWith runs script once python3 is known to import module, which
// Debian's package pkg provides.
func pythonWith(t testing.TB, module, pkg, script string, args ...string) string {
	t.Helper()
	requireFile(t, PythonPath, "python3")
	pythonMu.Lock()
	err, checked := pythonModules[module]
	if !checked {
		if out, cerr := exec.Command(PythonPath, "-c", "import "+module).CombinedOutput(); cerr != nil {
			err = fmt.Errorf("%w: %s", cerr, out)
		}
		pythonModules[module] = err
	}
	pythonMu.Unlock()
	if err != nil {
		t.Fatalf("harness: python3 cannot import %s (apt-get install %s, or make deps): %v", module, pkg, err)
	}
	return runTool(t, "", PythonPath, append([]string{"-c", script}, args...)...)
}

func requireFile(t testing.TB, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("harness: %s is required at %s: %v", what, path, err)
	}
}

// RunKcat runs kcat with stdin fed from in, bounded by ctx, and returns
// its standard output and error streams and its error. Unlike Kcat it
// does not fail the test: it is for callers that expect kcat to be
// refused, or retry it until it succeeds.
func RunKcat(ctx context.Context, in string, args ...string) (stdout, stderr string, err error) {
	return runCmd(ctx, in, KcatPath, args...)
}

// runTool runs name with a timeout and fails the test with stderr on error.
func runTool(t testing.TB, stdin, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	stdout, stderr, err := runCmd(ctx, stdin, name, args...)
	if ctx.Err() != nil {
		t.Fatalf("harness: %s %q timed out after %v\nstdout:\n%s\nstderr:\n%s", name, args, toolTimeout, stdout, stderr)
	}
	if err != nil {
		t.Fatalf("harness: %s %q: %v\nstdout:\n%s\nstderr:\n%s", name, args, err, stdout, stderr)
	}
	return stdout
}

// runCmd runs name with stdin fed from in until it exits or ctx ends, and
// returns what it wrote to stdout and stderr and how it ended.
func runCmd(ctx context.Context, in, name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// logTail returns the last n lines of the file at path (best effort).
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// UnderFileLimit is a wrapper (see SetWrapper) that runs the broker with
// an open-file limit of n, soft and hard, through prlimit (util-linux).
func UnderFileLimit(t testing.TB, n int) []string {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("harness: prlimit (util-linux) is required: %v", err)
	}
	return []string{prlimit, fmt.Sprintf("--nofile=%d:%d", n, n), "--"}
}
