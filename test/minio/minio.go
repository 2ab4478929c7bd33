package minio

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	// readyTimeout bounds the wait for a started server to answer its
	// health check (it takes under a second on an idle machine).
	readyTimeout = 60 * time.Second
	// stopTimeout bounds the wait for a graceful exit before SIGKILL.
	stopTimeout = 10 * time.Second
	// startAttempts retries with a new port when another process took the
	// free port between choosing it and the server binding it.
	startAttempts = 3
	// logLimit is how much of the server's output is kept for failures.
	logLimit = 64 << 10
)

// ErrNoBinary: the MinIO server binary is not installed.
var ErrNoBinary = errors.New("minio: MinIO server binary not found; run `make deps` (scripts/install-minio.sh) to install it")

// Server is a running MinIO server. Its exported fields do not change after
// Start (Restart keeps the address, credentials and data).
type Server struct {
	Endpoint  string          // base URL, e.g. http://127.0.0.1:40123
	Addr      string          // host:port of the S3 API
	AccessKey string          // root user
	SecretKey string          // root password
	Bucket    string          // a bucket created at start
	Region    string          // region the server reports ("us-east-1")
	Client    *miniogo.Client // minio-go client with the root credentials
	Dir       string          // data directory

	bin         string
	consoleAddr string
	ownDir      bool // Dir was created by New and is removed by Close

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of the server binary.
type process struct {
	cmd    *exec.Cmd
	log    *tailBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, set before exited closes
}

// Binary returns the path of the MinIO server binary: the first GOPATH
// entry's bin/minio, where scripts/install-minio.sh puts it.
func Binary() (string, error) {
	gopath := build.Default.GOPATH
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		gopath = string(bytes.TrimSpace(out))
	}
	if list := filepath.SplitList(gopath); len(list) > 0 {
		gopath = list[0]
	}
	bin := filepath.Join(gopath, "bin", "minio")
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w (looked for %s)", ErrNoBinary, bin)
	}
	return bin, nil
}

// Start starts a server for the test and stops it and removes its data on
// t.Cleanup. It fails the test if the binary is missing or the server does
// not come up.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New(t.Context())
	if err != nil {
		t.Fatalf("start MinIO: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stop MinIO: %v", err)
		}
	})
	return s
}

// New starts a server in a new temporary directory; the caller must Close
// it. Use it from TestMain to share one server among a package's tests.
func New(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "strata-minio-")
	if err != nil {
		return nil, fmt.Errorf("minio: %w", err)
	}
	s := &Server{
		AccessKey: "strata-" + randomHex(8),
		SecretKey: randomHex(20),
		Bucket:    "strata-test-" + randomHex(4),
		Region:    "us-east-1",
		Dir:       dir,
		bin:       bin,
		ownDir:    true,
	}
	if err := s.startFresh(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	client, err := miniogo.New(s.Addr, &miniogo.Options{
		Creds:  credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region: s.Region,
	})
	if err == nil {
		s.Client = client
		err = s.CreateBucket(ctx, s.Bucket)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("minio: %w", err)
	}
	return s, nil
}

// startFresh starts the server on new free ports, retrying when the port
// was taken in between.
func (s *Server) startFresh(ctx context.Context) error {
	var err error
	for range startAttempts {
		var ports []string
		if ports, err = freePorts(2); err != nil {
			return err
		}
		s.Addr, s.consoleAddr = ports[0], ports[1]
		s.Endpoint = "http://" + s.Addr
		if err = s.start(ctx); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
	}
	return err
}

// start runs the binary on s.Addr and waits until it is live. mu must be
// held or s not yet shared.
func (s *Server) start(ctx context.Context) error {
	cmd := exec.Command(s.bin, "server", filepath.Join(s.Dir, "data"),
		"--address", s.Addr, "--console-address", s.consoleAddr, "--quiet")
	cmd.Env = append(withoutMinioEnv(os.Environ()),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_REGION="+s.Region,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	p := &process{cmd: cmd, log: &tailBuffer{limit: logLimit}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("minio: start %s: %w", s.bin, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := waitLive(ctx, s.Endpoint, p); err != nil {
		p.stop()
		return fmt.Errorf("minio: server on %s: %w; output:\n%s", s.Addr, err, p.log)
	}
	s.proc = p
	return nil
}

// waitLive polls the liveness endpoint until it answers 200, the process
// exits, ctx ends or readyTimeout passes.
func waitLive(ctx context.Context, endpoint string, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/minio/health/live", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before becoming live: %v", p.err)
		case <-ctx.Done():
			return fmt.Errorf("not live: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// stop asks the process to exit and kills it after stopTimeout.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// CreateBucket creates a bucket (for tests that want one per case).
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	if err := s.Client.MakeBucket(ctx, name, miniogo.MakeBucketOptions{Region: s.Region}); err != nil {
		return fmt.Errorf("make bucket %s: %w", name, err)
	}
	return nil
}

// Stop stops the server, keeping its data and address, to simulate an
// outage; Restart brings it back. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
}

// Restart starts a stopped server again on the same address with the same
// data and credentials. It is an error if the server is running.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("minio: restart: server is running")
	}
	return s.start(ctx)
}

// Close stops the server and removes the data directory New created.
func (s *Server) Close() error {
	s.Stop()
	if s.ownDir {
		if err := os.RemoveAll(s.Dir); err != nil {
			return fmt.Errorf("minio: remove %s: %w", s.Dir, err)
		}
	}
	return nil
}

// freePorts returns n distinct free loopback addresses. The listeners are
// held until all are chosen, so the ports differ.
func freePorts(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("minio: free port: %w", err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// withoutMinioEnv drops MINIO_* variables of the caller so that only the
// settings chosen here apply.
func withoutMinioEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "MINIO_") {
			out = append(out, kv)
		}
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// tailBuffer keeps the last limit bytes written to it; safe for the two
// copying goroutines of exec.Cmd and a reader.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	limit int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Pid is the server process's id (0 while stopped), for benchmarks that
// measure its CPU.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.cmd.Process == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}
