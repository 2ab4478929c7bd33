package harness

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestFreePortIsBindable(t *testing.T) {
	port := FreePort(t)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listen on free port %d: %v", port, err)
	}
	l.Close()
}

func TestModuleRoot(t *testing.T) {
	root, err := moduleRoot()
	if err != nil || !fileExists(root+"/go.mod") {
		t.Fatalf("module root %q: %v", root, err)
	}
}

func TestToolsPresent(t *testing.T) {
	if out := Kcat(t, "-V"); !strings.Contains(out, "kcat") {
		t.Errorf("kcat -V printed %q", out)
	}
	if out := Python(t, "import kafka, sys; print(kafka.__version__, sys.argv[1])", "arg"); !strings.HasSuffix(strings.TrimSpace(out), "arg") {
		t.Errorf("python printed %q", out)
	}
}

// TestStartRestart starts an in-process broker, restarts it on the same port
// and pings it both times.
func TestStartRestart(t *testing.T) {
	b := Start(t, nil)
	addr := b.Addr()
	if err := Ping(context.Background(), addr); err != nil {
		t.Fatalf("ping: %v", err)
	}
	b.Restart()
	if b.Addr() != addr {
		t.Fatalf("restart moved the broker from %s to %s", addr, b.Addr())
	}
	if err := Ping(context.Background(), addr); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestMain(m *testing.M) { Main(m) }

// TestProcessRestartAndKill9 exercises the real binary: graceful restart,
// SIGKILL and restart after the crash, on a stable address.
func TestProcessRestartAndKill9(t *testing.T) {
	p := StartProcess(t, map[string]string{"broker.session.timeout.ms": "3000"})
	p.Restart()
	p.Kill9()
	if p.Running() {
		t.Fatal("process still running after Kill9")
	}
	p.Restart()
	if err := Ping(context.Background(), p.Addr()); err != nil {
		t.Fatalf("ping after crash restart: %v", err)
	}
}
