package minio

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	miniogo "github.com/minio/minio-go/v7"
)

func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	ctx := t.Context()
	if !strings.HasPrefix(s.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint %q is not on loopback", s.Endpoint)
	}
	if ok, err := s.Client.BucketExists(ctx, s.Bucket); err != nil || !ok {
		t.Fatalf("bucket %s exists = %v, %v", s.Bucket, ok, err)
	}
	data := []byte("hello")
	if _, err := s.Client.PutObject(ctx, s.Bucket, "a/b", bytes.NewReader(data), int64(len(data)), miniogo.PutObjectOptions{}); err != nil {
		t.Fatalf("put: %v", err)
	}

	s.Stop()
	s.Stop() // idempotent
	if resp, err := http.Get(s.Endpoint + "/minio/health/live"); err == nil {
		resp.Body.Close()
		t.Fatal("server still answers after Stop")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := s.Restart(ctx); err == nil {
		t.Fatal("Restart of a running server succeeded")
	}
	info, err := s.Client.StatObject(ctx, s.Bucket, "a/b", miniogo.StatObjectOptions{})
	if err != nil || info.Size != int64(len(data)) {
		t.Fatalf("object after restart: %+v, %v", info, err)
	}
	if err := s.CreateBucket(ctx, "second"); err != nil {
		t.Fatal(err)
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("GOPATH", t.TempDir())
	_, err := Binary()
	if !errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("Binary() error = %v, want ErrNoBinary mentioning make deps", err)
	}
}
