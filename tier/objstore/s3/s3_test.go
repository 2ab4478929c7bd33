package s3

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	miniogo "github.com/minio/minio-go/v7"

	"github.com/strata-broker/strata/test/minio"
	"github.com/strata-broker/strata/tier/objstore"
	"github.com/strata-broker/strata/tier/objstore/objstoretest"
)

// storeFor returns a store on srv's bucket with the given prefix and test
// sized retries.
func storeFor(t *testing.T, srv *minio.Server, endpoint, bucket, prefix string) *Store {
	t.Helper()
	s, err := New(t.Context(), Options{
		Bucket: bucket, Prefix: prefix, Endpoint: endpoint, Region: srv.Region,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true,
		PartSize: MinPartSize, MaxAttempts: 3, MaxBackoff: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance runs the suite against a real MinIO, each subtest under
// its own prefix of one bucket (so List also proves prefixes isolate), with
// a large object of three 5 MiB parts.
func TestConformance(t *testing.T) {
	srv := minio.Start(t)
	n := 0
	objstoretest.Run(t, func(t *testing.T) objstore.ObjectStore {
		n++
		return storeFor(t, srv, srv.Endpoint, srv.Bucket, fmt.Sprintf("conformance-%d", n))
	}, objstoretest.LargeObjectSize(2*MinPartSize+12345))
}

// TestObjectNamesAndMultipart checks with minio-go what the store wrote:
// names under the prefix, sizes, a multipart ETag for a large object, and
// no multipart upload left behind by a failed Put.
func TestObjectNamesAndMultipart(t *testing.T) {
	srv := minio.Start(t)
	ctx := t.Context()
	for _, prefix := range []string{"", "tier", "tier/"} {
		s := storeFor(t, srv, srv.Endpoint, srv.Bucket, prefix)
		want := strings.TrimSuffix(prefix, "/")
		if want != "" {
			want += "/"
		}
		want += "t-id/0/00000000000000000000-c1.log"
		if got := s.ObjectName("t-id/0/00000000000000000000-c1.log"); got != want {
			t.Fatalf("ObjectName with prefix %q = %q, want %q", prefix, got, want)
		}
	}
	s := storeFor(t, srv, srv.Endpoint, srv.Bucket, "tier")
	if err := s.Put(ctx, "small", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (2*MinPartSize+1)/16+1)
	if err := s.Put(ctx, "big", bytes.NewReader(big), int64(len(big))); err != nil {
		t.Fatal(err)
	}
	for key, size := range map[string]int{"tier/small": 3, "tier/big": len(big)} {
		info, err := srv.Client.StatObject(ctx, srv.Bucket, key, miniogo.StatObjectOptions{})
		if err != nil || info.Size != int64(size) {
			t.Fatalf("minio-go stat %s = size %d, %v; want %d", key, info.Size, err, size)
		}
		if multipart := strings.HasSuffix(info.ETag, "-3"); multipart != (key == "tier/big") {
			t.Errorf("%s: ETag %q (a 3-part upload ends in -3)", key, info.ETag)
		}
	}

	// A body failing after the first part: the upload is aborted.
	body := io.MultiReader(bytes.NewReader(big[:MinPartSize+100]), errReader{})
	if err := s.Put(ctx, "failed", body, int64(len(big))); err == nil {
		t.Fatal("Put with a failing body succeeded")
	}
	for up := range srv.Client.ListIncompleteUploads(ctx, srv.Bucket, "tier/", true) {
		t.Errorf("multipart upload left behind: %+v", up)
	}
	if _, err := srv.Client.StatObject(ctx, srv.Bucket, "tier/failed", miniogo.StatObjectOptions{}); err == nil {
		t.Error("failed Put left an object")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk read failed") }

// TestUnreachable points a store at a closed port: every operation fails
// with a retriable ErrUnavailable, within a bounded time.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close()
	s, err := New(t.Context(), Options{Bucket: "b", Endpoint: endpoint, AccessKey: "k", SecretKey: "secret",
		PathStyle: true, MaxAttempts: 3, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	start := time.Now()
	errs := map[string]error{
		"put":    s.Put(ctx, "k", strings.NewReader("x"), 1),
		"delete": s.Delete(ctx, "k"),
	}
	_, errs["get"] = s.GetRange(ctx, "k", 0, -1)
	_, errs["head"] = s.Head(ctx, "k")
	for _, err := range s.List(ctx, "") {
		errs["list"] = err
	}
	for op, err := range errs {
		if !errors.Is(err, objstore.ErrUnavailable) {
			t.Errorf("%s error = %v, want ErrUnavailable", op, err)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("operations against a closed port took %v", d)
	}
}

// TestServerFailures runs a store through a proxy to MinIO that answers
// chosen requests with an error status: transient 5xx are retried away,
// persistent ones become ErrUnavailable after MaxAttempts tries, and a 403
// is a plain (non-retriable) error.
func TestServerFailures(t *testing.T) {
	srv := minio.Start(t)
	ctx := t.Context()
	var failNext, status, requests atomic.Int32
	target, _ := url.Parse(srv.Endpoint)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if failNext.Add(-1) >= 0 {
			w.WriteHeader(int(status.Load()))
			return
		}
		rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the client signed the proxy's host
		}}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	s := storeFor(t, srv, proxy.URL, srv.Bucket, "")
	fail := func(n, code int) { failNext.Store(int32(n)); status.Store(int32(code)); requests.Store(0) }

	fail(2, http.StatusServiceUnavailable)
	if err := s.Put(ctx, "k", strings.NewReader("x"), 1); err != nil {
		t.Fatalf("Put after two 503s with 3 attempts: %v", err)
	}
	if requests.Load() != 3 {
		t.Errorf("Put took %d requests, want 3", requests.Load())
	}
	fail(100, http.StatusInternalServerError)
	if _, err := s.Head(ctx, "k"); !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("Head against persistent 500s error = %v, want ErrUnavailable", err)
	}
	if _, err := s.GetRange(ctx, "k", 0, -1); !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("GetRange against persistent 500s error = %v, want ErrUnavailable", err)
	}
	if requests.Load() != 6 {
		t.Errorf("two operations took %d requests, want 2×3", requests.Load())
	}
	fail(100, http.StatusForbidden)
	if _, err := s.Head(ctx, "k"); err == nil || errors.Is(err, objstore.ErrUnavailable) || errors.Is(err, objstore.ErrNotExist) {
		t.Errorf("Head answered 403 error = %v, want a plain error", err)
	}
	fail(0, 0)
	if got, err := s.GetRange(ctx, "k", 0, -1); err != nil {
		t.Fatalf("GetRange once the store is healthy: %v", err)
	} else {
		got.Close()
	}
}

// TestOutage stops MinIO: a read fails with ErrUnavailable and succeeds once
// the server is back.
func TestOutage(t *testing.T) {
	srv := minio.Start(t)
	ctx := t.Context()
	s := storeFor(t, srv, srv.Endpoint, srv.Bucket, "")
	if err := s.Put(ctx, "seg", strings.NewReader("payload"), 7); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if _, err := s.GetRange(ctx, "seg", 0, -1); !errors.Is(err, objstore.ErrUnavailable) {
		t.Fatalf("GetRange during the outage error = %v, want ErrUnavailable", err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	rc, err := s.GetRange(ctx, "seg", 3, -1)
	if err != nil {
		t.Fatalf("GetRange after the outage: %v", err)
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || string(got) != "load" {
		t.Fatalf("read after the outage = %q, %v", got, err)
	}
}

// TestDefaultCredentialChain leaves the keys empty and provides them in
// the standard AWS environment variables instead.
func TestDefaultCredentialChain(t *testing.T) {
	srv := minio.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s, err := New(t.Context(), Options{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "env", strings.NewReader("ok"), 2); err != nil {
		t.Fatalf("Put with credentials from the environment: %v", err)
	}
	if info, err := s.Head(t.Context(), "env"); err != nil || info.Size != 2 {
		t.Fatalf("Head = %+v, %v", info, err)
	}
}

func TestNewValidation(t *testing.T) {
	for name, o := range map[string]Options{
		"no bucket":      {},
		"bad endpoint":   {Bucket: "b", Endpoint: "127.0.0.1:9000"},
		"ftp endpoint":   {Bucket: "b", Endpoint: "ftp://127.0.0.1"},
		"half keys":      {Bucket: "b", AccessKey: "k"},
		"tiny part size": {Bucket: "b", PartSize: 1 << 20},
	} {
		if _, err := New(t.Context(), o); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	s, err := New(t.Context(), Options{Bucket: "b", Prefix: strings.Repeat("p", 1000), AccessKey: "k", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), strings.Repeat("k", 30)); !errors.Is(err, objstore.ErrInvalidKey) {
		t.Errorf("key too long with the prefix: error = %v, want ErrInvalidKey", err)
	}
}
