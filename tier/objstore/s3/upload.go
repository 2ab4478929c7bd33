// The upload manager is deprecated in favour of feature/s3/transfermanager,
// which is still pre-1.0; the manager is stable and does what Put needs.
//
//lint:file-ignore SA1019 manager.Uploader is used on purpose, see above.

package s3

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/strata-broker/strata/tier/objstore"
)

// maxParts is S3's limit on the parts of one multipart upload.
const maxParts = 10_000

// newUploader returns the manager shared by all Puts of a store (it is safe
// for concurrent use and pools its part buffers).
func newUploader(client *awss3.Client, partSize int64, concurrency int) *manager.Uploader {
	return manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = partSize
		u.Concurrency = concurrency
		u.LeavePartsOnError = false // abort failed multipart uploads
	})
}

// Put implements objstore.ObjectStore with the SDK's upload manager: one
// PutObject up to PartSize bytes, else a multipart upload that is aborted
// on failure.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	if err := s.checkKey(key); err != nil {
		return fmt.Errorf("s3: put: %w", err)
	}
	r, err := objstore.SizedBody(body, size)
	if err != nil {
		return fmt.Errorf("s3: put %q: %w", key, err)
	}
	var perCall []func(*manager.Uploader)
	if partSize := (size + maxParts - 1) / maxParts; partSize > s.partSize {
		// A huge object: grow its parts so that they fit in maxParts.
		perCall = append(perCall, func(u *manager.Uploader) { u.PartSize = partSize })
	}
	_, err = s.uploader.Upload(ctx, &awss3.PutObjectInput{
		Bucket: &s.bucket,
		Key:    aws.String(s.ObjectName(key)),
		Body:   r,
	}, perCall...)
	if err != nil {
		return s.wrap("put", key, err)
	}
	return nil
}
