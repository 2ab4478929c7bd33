package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/strata-broker/strata/tier/objstore"
)

// Defaults of Options.
const (
	DefaultRegion                = "us-east-1"
	DefaultPartSize              = 16 << 20
	MinPartSize                  = 5 << 20 // S3's minimum multipart part size
	DefaultConcurrency           = 4
	DefaultMaxAttempts           = 5
	DefaultMaxBackoff            = 2 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
)

// Options configure a Store. Only Bucket is required.
type Options struct {
	Bucket string
	// Prefix is put before every key ("tier" stores key k as "tier/k").
	Prefix string
	// Endpoint is the base URL of an S3-compatible service, such as
	// http://127.0.0.1:9000 for MinIO; empty means AWS S3.
	Endpoint string
	// Region of the bucket; empty: AWS_REGION or the shared config, else
	// DefaultRegion.
	Region string
	// AccessKey and SecretKey are static credentials; both empty means the
	// SDK's default credential chain (the standard AWS environment).
	AccessKey, SecretKey string
	// PathStyle addresses buckets as endpoint/bucket/key instead of
	// bucket.endpoint/key (needed by MinIO).
	PathStyle bool

	// PartSize is the size of one part of a multipart upload; bodies up to
	// it are uploaded with one PutObject. Default DefaultPartSize, at least
	// MinPartSize.
	PartSize int64
	// Concurrency is how many parts of one upload are in flight (default
	// DefaultConcurrency).
	Concurrency int
	// MaxAttempts is the number of tries of each request, the first one
	// included (default DefaultMaxAttempts).
	MaxAttempts int
	// MaxBackoff caps the exponential backoff between tries (default
	// DefaultMaxBackoff).
	MaxBackoff time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's headers after
	// a request was sent, so a hung server counts as a retriable timeout
	// (default DefaultResponseHeaderTimeout).
	ResponseHeaderTimeout time.Duration
}

// Store is an objstore.ObjectStore over one bucket (and prefix). Create it
// with New.
type Store struct {
	client   *awss3.Client
	retryer  *retry.Standard
	bucket   string
	prefix   string // "" or ending in '/'
	partSize int64
	//lint:ignore SA1019 the deprecated manager is used on purpose, see upload.go.
	uploader *manager.Uploader
}

var _ objstore.ObjectStore = (*Store)(nil)

// New validates opts and builds a Store. It sends no request, so a store
// that is down does not keep the caller from starting.
func New(ctx context.Context, opts Options) (*Store, error) {
	if opts.Bucket == "" {
		return nil, errors.New("s3: bucket is not set")
	}
	if opts.Endpoint != "" {
		u, err := url.Parse(opts.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("s3: endpoint %q is not an http(s) URL", opts.Endpoint)
		}
	}
	if (opts.AccessKey == "") != (opts.SecretKey == "") {
		return nil, errors.New("s3: set both access key and secret key, or neither for the default credential chain")
	}
	if opts.PartSize == 0 {
		opts.PartSize = DefaultPartSize
	}
	if opts.PartSize < MinPartSize {
		return nil, fmt.Errorf("s3: part size %d is below the minimum %d", opts.PartSize, MinPartSize)
	}
	opts.Concurrency = orDefault(opts.Concurrency, DefaultConcurrency)
	opts.MaxAttempts = orDefault(opts.MaxAttempts, DefaultMaxAttempts)
	opts.MaxBackoff = orDefault(opts.MaxBackoff, DefaultMaxBackoff)
	opts.ResponseHeaderTimeout = orDefault(opts.ResponseHeaderTimeout, DefaultResponseHeaderTimeout)

	retryer := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = opts.MaxAttempts
		o.MaxBackoff = opts.MaxBackoff
		// The client-side retry quota would turn a long outage into
		// non-retried failures; backoff and MaxAttempts bound the load.
		o.RateLimiter = ratelimit.None
	})
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.ResponseHeaderTimeout = opts.ResponseHeaderTimeout
		tr.MaxIdleConnsPerHost = 64
	})
	loadOpts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRetryer(func() aws.Retryer { return retryer }),
		awsconfig.WithHTTPClient(httpClient),
		awsconfig.WithLogger(sdkLogger{}),
	}
	if opts.Region != "" {
		loadOpts = append(loadOpts, awsconfig.WithRegion(opts.Region))
	}
	if opts.AccessKey != "" {
		loadOpts = append(loadOpts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(opts.AccessKey, opts.SecretKey, "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	client := awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = opts.PathStyle
	})
	prefix := opts.Prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Store{client: client, retryer: retryer, bucket: opts.Bucket, prefix: prefix,
		partSize: opts.PartSize, uploader: newUploader(client, opts.PartSize, opts.Concurrency)}, nil
}

// sdkLogger sends the SDK's own log lines to slog at debug level: it
// reports routine conditions (a ranged GET has no checksum to validate) at
// warning level on every request.
type sdkLogger struct{}

func (sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	slog.Debug("s3: sdk: "+fmt.Sprintf(format, v...), "sdk_level", string(c))
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Bucket returns the bucket the store writes to.
func (s *Store) Bucket() string { return s.bucket }

// ObjectName returns the S3 object name of key (prefix included), for
// checking a bucket with other tools.
func (s *Store) ObjectName(key string) string { return s.prefix + key }

// checkKey applies objstore.ValidateKey and S3's limit on the whole name.
func (s *Store) checkKey(key string) error {
	if err := objstore.ValidateKey(key); err != nil {
		return err
	}
	if len(s.prefix)+len(key) > objstore.MaxKeyLen {
		return fmt.Errorf("%w %q: longer than %d bytes with the prefix %q", objstore.ErrInvalidKey, key, objstore.MaxKeyLen, s.prefix)
	}
	return nil
}

// Head implements objstore.ObjectStore.
func (s *Store) Head(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := s.checkKey(key); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("s3: head: %w", err)
	}
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.ObjectName(key))})
	if err != nil {
		return objstore.ObjectInfo{}, s.wrap("head", key, err)
	}
	return objstore.ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// GetRange implements objstore.ObjectStore.
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := s.checkKey(key); err != nil {
		return nil, fmt.Errorf("s3: get: %w", err)
	}
	if err := objstore.CheckRange(off, n); err != nil {
		return nil, fmt.Errorf("s3: get %q: %w", key, err)
	}
	if n == 0 {
		return s.emptyRange(ctx, key, off)
	}
	in := &awss3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.ObjectName(key))}
	switch {
	case n > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	case off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if isInvalidRange(err) {
			return s.emptyRange(ctx, key, off)
		}
		return nil, s.wrap("get", key, err)
	}
	return &body{rc: out.Body, key: key}, nil
}

// emptyRange answers a read that returns no bytes: it exists only if the
// object does and off is at most its size.
func (s *Store) emptyRange(ctx context.Context, key string, off int64) (io.ReadCloser, error) {
	info, err := s.Head(ctx, key)
	if err != nil {
		return nil, err
	}
	if _, err := objstore.ClampRange(off, 0, info.Size); err != nil {
		return nil, fmt.Errorf("s3: get %q: %w", key, err)
	}
	return io.NopCloser(strings.NewReader("")), nil
}

// body is a GET's response body whose read failures are classified.
type body struct {
	rc  io.ReadCloser
	key string
}

// Read passes io.EOF and context errors through; any other failure of an
// open response stream is a transport failure, so ErrUnavailable.
func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case err == nil, err == io.EOF:
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("s3: read %q: %w", b.key, err)
	default:
		err = fmt.Errorf("s3: read %q: %w: %w", b.key, objstore.ErrUnavailable, err)
	}
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }

// List implements objstore.ObjectStore with ListObjectsV2, which returns
// keys in UTF-8 binary order, the order the interface promises.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[objstore.ObjectInfo, error] {
	return func(yield func(objstore.ObjectInfo, error) bool) {
		pages := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{
			Bucket: &s.bucket,
			Prefix: aws.String(s.prefix + prefix),
		})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(objstore.ObjectInfo{}, s.wrap("list", prefix, err))
				return
			}
			for _, obj := range page.Contents {
				info := objstore.ObjectInfo{
					Key:     strings.TrimPrefix(aws.ToString(obj.Key), s.prefix),
					Size:    aws.ToInt64(obj.Size),
					ModTime: aws.ToTime(obj.LastModified),
				}
				if !yield(info, nil) {
					return
				}
			}
		}
	}
}

// Delete implements objstore.ObjectStore; S3 answers 204 for absent keys too.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.checkKey(key); err != nil {
		return fmt.Errorf("s3: delete: %w", err)
	}
	_, err := s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.ObjectName(key))})
	if err != nil && !isNotFound(err) {
		return s.wrap("delete", key, err)
	}
	return nil
}

// wrap gives err its context and the sentinel that callers test for.
func (s *Store) wrap(op, key string, err error) error {
	switch {
	case isNotFound(err):
		return fmt.Errorf("s3: %s %q: %w", op, key, objstore.ErrNotExist)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("s3: %s %q: %w", op, key, err)
	case s.retryer.IsErrorRetryable(err):
		return fmt.Errorf("s3: %s %q: %w: %w", op, key, objstore.ErrUnavailable, err)
	}
	return fmt.Errorf("s3: %s %q: %w", op, key, err)
}

func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode() == "NoSuchKey" || apiErr.ErrorCode() == "NotFound")
}

func isInvalidRange(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "InvalidRange" {
		return true
	}
	var respErr *awshttp.ResponseError
	return errors.As(err, &respErr) && respErr.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}
