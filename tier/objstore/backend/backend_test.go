package backend

import (
	"path/filepath"
	"strings"
	"testing"

	miniogo "github.com/minio/minio-go/v7"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/test/minio"
	"github.com/strata-broker/strata/tier/objstore/localdir"
)

func parse(t *testing.T, kv map[string]string) *config.Broker {
	t.Helper()
	b, err := config.Parse(kv)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLocal(t *testing.T) {
	logDir := t.TempDir()
	for name, kv := range map[string]map[string]string{
		"default dir":  {"log.dirs": logDir},
		"explicit dir": {"log.dirs": t.TempDir(), "remote.log.storage.local.dir": filepath.Join(logDir, "tier-store")},
	} {
		s, err := FromConfig(t.Context(), parse(t, kv))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ld, ok := s.(*localdir.Store)
		if !ok || ld.Dir() != filepath.Join(logDir, "tier-store") {
			t.Fatalf("%s: store %T at %v, want a localdir at <log dir>/tier-store", name, s, ld)
		}
	}
	b := parse(t, nil)
	b.RemoteLogStorageBackend = "gcs"
	if _, err := FromConfig(t.Context(), b); err == nil || !strings.Contains(err.Error(), "gcs") {
		t.Fatalf("unknown backend error = %v", err)
	}
}

func TestS3(t *testing.T) {
	srv := minio.Start(t)
	b := parse(t, map[string]string{
		"remote.log.storage.system.enable": "true",
		"remote.log.storage.backend":       "s3",
		"remote.log.storage.s3.bucket":     srv.Bucket,
		"remote.log.storage.s3.prefix":     "cluster-a",
		"remote.log.storage.s3.endpoint":   srv.Endpoint,
		"remote.log.storage.s3.access.key": srv.AccessKey,
		"remote.log.storage.s3.secret.key": srv.SecretKey,
		"remote.log.storage.s3.path.style": "true",
		"remote.log.storage.s3.region":     srv.Region,
	})
	s, err := FromConfig(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "t/0/x.log", strings.NewReader("data"), 4); err != nil {
		t.Fatalf("Put: %v", err)
	}
	info, err := srv.Client.StatObject(t.Context(), srv.Bucket, "cluster-a/t/0/x.log", miniogo.StatObjectOptions{})
	if err != nil || info.Size != 4 {
		t.Fatalf("object under the configured prefix: %+v, %v", info, err)
	}
	b.RemoteLogStorageS3.Bucket = ""
	if _, err := FromConfig(t.Context(), b); err == nil {
		t.Fatal("FromConfig without a bucket succeeded")
	}
}
