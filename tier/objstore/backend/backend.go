package backend

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/objstore"
	"github.com/strata-broker/strata/tier/objstore/localdir"
	"github.com/strata-broker/strata/tier/objstore/s3"
)

// Names of remote.log.storage.backend.
const (
	Local = "local"
	S3    = "s3"
)

// FromConfig returns the object store that b configures. It does not look
// at remote.log.storage.system.enable (the caller decides whether tiering is
// on) and sends no request to S3, so an unreachable bucket does not keep the
// broker from starting. Options of the s3 backend that have no broker key
// (part size, retries) keep their defaults.
func FromConfig(ctx context.Context, b *config.Broker) (objstore.ObjectStore, error) {
	switch b.RemoteLogStorageBackend {
	case Local, "":
		dir := b.RemoteLogStorageLocalDir
		if dir == "" {
			if len(b.LogDirs) == 0 {
				return nil, errors.New("backend: remote.log.storage.local.dir and log.dirs are empty")
			}
			dir = filepath.Join(b.LogDirs[0], "tier-store")
		}
		s, err := localdir.New(dir)
		if err != nil {
			return nil, fmt.Errorf("backend: remote.log.storage.local.dir: %w", err)
		}
		return s, nil
	case S3:
		c := b.RemoteLogStorageS3
		s, err := s3.New(ctx, s3.Options{
			Bucket:    c.Bucket,
			Prefix:    c.Prefix,
			Endpoint:  c.Endpoint,
			Region:    c.Region,
			AccessKey: c.AccessKey,
			SecretKey: c.SecretKey,
			PathStyle: c.PathStyle,
		})
		if err != nil {
			return nil, fmt.Errorf("backend: remote.log.storage.s3: %w", err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("backend: remote.log.storage.backend %q is not %q or %q", b.RemoteLogStorageBackend, Local, S3)
}
