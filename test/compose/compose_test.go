package compose

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/test/harness"
)

const (
	// stackTimeout bounds every wait on the stack: start, failover,
	// objects in the bucket.
	stackTimeout = 90 * time.Second
	// records is how many records the test produces.
	records = 3000
	topic   = "compose"
	bucket  = "strata" // as deploy/compose.yaml's minio-init creates it
)

// stack is one run of deploy/compose.yaml.
type stack struct {
	t       *testing.T
	project string
	files   []string
	env     []string
	kafka   []string // host:port of each broker's EXTERNAL listener
	metrics []string // host:port of each broker's metrics.listener
	minio   string
}

// compose runs docker-compose on the stack and returns its output.
func (s *stack) compose(ctx context.Context, args ...string) (string, error) {
	full := []string{"-p", s.project}
	for _, f := range s.files {
		full = append(full, "-f", f)
	}
	cmd := exec.CommandContext(ctx, "docker-compose", append(full, args...)...)
	cmd.Env = append(os.Environ(), s.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker-compose %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// mustCompose is compose that fails the test on error.
func (s *stack) mustCompose(args ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stackTimeout)
	defer cancel()
	if _, err := s.compose(ctx, args...); err != nil {
		s.t.Fatal(err)
	}
}

// kcat runs kcat against the brokers still up, with stdin from in.
func kcat(ctx context.Context, brokers []string, in string, args ...string) (string, error) {
	out, stderr, err := harness.RunKcat(ctx, in, append([]string{"-b", strings.Join(brokers, ",")}, args...)...)
	if err != nil {
		return out, fmt.Errorf("kcat %s: %w: %s", strings.Join(args, " "), err, stderr)
	}
	return out, nil
}

// poll calls f until it returns nil or stackTimeout passes, and returns
// its last error then.
func poll(f func(ctx context.Context) error) error {
	deadline := time.Now().Add(stackTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := f(ctx)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ready reports whether the broker's /readyz answers 200.
func ready(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+broker.ReadyzPath, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s", addr, broker.ReadyzPath, resp.Status)
	}
	return nil
}

// consumeAll reads the topic from the beginning to its end with kcat and
// returns the key=value lines.
func consumeAll(ctx context.Context, brokers []string) ([]string, error) {
	out, err := kcat(ctx, brokers, "", "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k=%s\n")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(lines)
	return lines, nil
}

func TestCompose(t *testing.T) {
	if os.Getenv("STRATA_COMPOSE_TEST") == "" {
		t.Skip("STRATA_COMPOSE_TEST unset: run `make compose-test` (scripts/compose-test.sh builds the images and sets it)")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	s := &stack{t: t, project: fmt.Sprintf("stratatest%d", os.Getpid())}
	for i := range 3 {
		s.kafka = append(s.kafka, fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)))
		s.metrics = append(s.metrics, fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)))
		_, kp, _ := strings.Cut(s.kafka[i], ":")
		_, mp, _ := strings.Cut(s.metrics[i], ":")
		s.env = append(s.env, fmt.Sprintf("STRATA_KAFKA_PORT_%d=%s", i+1, kp), fmt.Sprintf("STRATA_METRICS_PORT_%d=%s", i+1, mp))
	}
	minioPort := harness.FreePort(t)
	s.minio = fmt.Sprintf("127.0.0.1:%d", minioPort)
	s.env = append(s.env, fmt.Sprintf("STRATA_MINIO_PORT=%d", minioPort))
	// The image minio/mc is not built here: minio-init runs the Strata
	// image's `strata version` instead, and the test makes the bucket.
	override := filepath.Join(t.TempDir(), "compose.override.yaml")
	if err := os.WriteFile(override, []byte(`version: "3.8"
services:
  minio-init:
    image: ${STRATA_IMAGE}
    restart: "no"
    entrypoint: ["/usr/local/bin/strata"]
    command: ["version"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s.files = []string{filepath.Join(root, "deploy", "compose.yaml"), override}

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stackTimeout)
		defer cancel()
		if t.Failed() {
			out, _ := s.compose(ctx, "logs", "--no-color", "--tail=150", "broker-1", "broker-2", "broker-3")
			t.Logf("logs:\n%s", out)
		}
		if out, err := s.compose(ctx, "down", "--volumes", "--remove-orphans", "--timeout", "10"); err != nil {
			t.Errorf("tear down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	s.mustCompose("up", "--detach", "--no-build")

	mc, err := miniogo.New(s.minio, &miniogo.Options{Creds: credentials.NewStaticV4("strata", "strata-secret", "")})
	if err != nil {
		t.Fatal(err)
	}
	if err := poll(func(ctx context.Context) error {
		if ok, err := mc.BucketExists(ctx, bucket); err != nil || ok {
			return err
		}
		return mc.MakeBucket(ctx, bucket, miniogo.MakeBucketOptions{})
	}); err != nil {
		t.Fatalf("MinIO bucket: %v", err)
	}
	for _, m := range s.metrics {
		if err := poll(func(ctx context.Context) error { return ready(ctx, m) }); err != nil {
			t.Fatalf("broker not ready: %v", err)
		}
	}
	t.Logf("stack up and ready in %v", time.Since(start).Round(time.Millisecond))

	adm := harness.NewAdmin(t, s.kafka[0])
	if err := poll(func(ctx context.Context) error {
		_, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{
			"remote.storage.enable": new("true"),
			"segment.bytes":         new("16384"),
			"local.retention.ms":    new("1"),
		}, topic)
		if err != nil && strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return nil
		}
		return err
	}); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	var in strings.Builder
	var want []string
	for i := range records {
		line := fmt.Sprintf("k%05d=%s", i, strings.Repeat(fmt.Sprintf("v%05d;", i), 12))
		want = append(want, line)
		in.WriteString(line + "\n")
	}
	slices.Sort(want)
	ctx, cancel := context.WithTimeout(context.Background(), stackTimeout)
	defer cancel()
	// Small batches: a segment rolls only at the append after it reached
	// segment.bytes, so one large batch a partition would leave nothing
	// sealed to tier.
	if _, err := kcat(ctx, s.kafka, in.String(), "-P", "-t", topic, "-K", "=", "-X", "acks=all", "-X", "enable.idempotence=true", "-z", "none",
		"-X", "batch.size=4096", "-X", "batch.num.messages=32"); err != nil {
		t.Fatalf("produce: %v", err)
	}
	got, err := consumeAll(ctx, s.kafka)
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("consumed %d records, want the %d produced", len(got), len(want))
	}

	// Objects reach MinIO: the tiered segments of the topic.
	if err := poll(func(ctx context.Context) error {
		n := 0
		for o := range mc.ListObjects(ctx, bucket, miniogo.ListObjectsOptions{Prefix: topic + "-", Recursive: true}) {
			if o.Err != nil {
				return o.Err
			}
			if strings.HasSuffix(o.Key, ".log") {
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("no segment of %s in bucket %s yet", topic, bucket)
		}
		return nil
	}); err != nil {
		// The brokers' own view of their tiering, with its last errors.
		for i, m := range s.metrics {
			if resp, err := http.Get("http://" + m + "/v1/tier/status?topic=" + topic); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Logf("broker-%d tier status: %s", i+1, b)
			}
		}
		t.Fatal(err)
	}

	// The image's HEALTHCHECK (strata probe on /readyz, in a scratch
	// image) reports the brokers healthy.
	if err := poll(func(ctx context.Context) error {
		id, err := s.compose(ctx, "ps", "-q", "broker-1")
		if err != nil {
			return err
		}
		out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.Health.Status}}", strings.TrimSpace(id)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("docker inspect: %w: %s", err, out)
		}
		if st := strings.TrimSpace(string(out)); st != "healthy" {
			return fmt.Errorf("broker-1's health check: %s", st)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// A broker container killed: every acknowledged record is still read
	// from the other two (leadership moves once its lease expires).
	s.mustCompose("kill", "-s", "SIGKILL", "broker-2")
	alive := []string{s.kafka[0], s.kafka[2]}
	killed := time.Now()
	if err := poll(func(ctx context.Context) error {
		got, err := consumeAll(ctx, alive)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("consumed %d records after the kill, want the %d acknowledged", len(got), len(want))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("all %d records read back %v after broker-2 was killed; %v in all", records, time.Since(killed).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	// The survivors stay ready: with replication factor 3 and
	// min.insync.replicas=2, no partition falls below it.
	for _, m := range []string{s.metrics[0], s.metrics[2]} {
		if err := poll(func(ctx context.Context) error { return ready(ctx, m) }); err != nil {
			t.Errorf("after the kill: %v", err)
		}
	}
}
