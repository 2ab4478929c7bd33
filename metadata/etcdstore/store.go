package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/strata-broker/strata/metadata"
)

// dialTimeout bounds establishing the first connection to etcd.
const dialTimeout = 5 * time.Second

// maxRequestBytes is the largest write this client sends (and the
// embedded etcd's --max-request-bytes): MaxPartitionsPerWrite partitions
// of Kafka's longest topic names fit. etcd's default is 1.5 MiB; an
// external etcd refuses larger requests itself (metadata.ErrTooLarge).
const maxRequestBytes = 8 << 20

// opOverhead is an upper bound on the bytes a txn op adds to a request
// beyond its key and value (protobuf framing).
const opOverhead = 16

// reconnectMaxDelay caps gRPC's backoff between attempts to reconnect to
// a member (its default grows to two minutes), so that once etcd is back
// the broker is too within a second or so — before the leases that a
// restarted etcd extended by one TTL run out.
const reconnectMaxDelay = time.Second

// A connection to a member that stopped answering (a paused or hung
// process keeps its sockets open) is closed after keepAliveTime of
// silence plus keepAliveTimeout, so requests and watches move to another
// member. keepAliveTime stays above etcd's --grpc-keepalive-min-time
// (5 s), below which the server drops the connection.
const (
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 5 * time.Second
)

// maxCASAttempts bounds the read-compare-swap loops under contention.
const maxCASAttempts = 64

// Store is the etcd-backed metadata store. It implements metadata.Store.
type Store struct {
	cli       *clientv3.Client
	keys      keys
	log       *slog.Logger
	clusterID string
	cache     *metadata.Cache
	outage    *outage

	stopWatch context.CancelFunc
	watchDone chan struct{}

	closed atomic.Bool
	mu     sync.Mutex                 // guards regs
	regs   map[*registration]struct{} // open broker registrations
}

var _ metadata.Store = (*Store)(nil)

// Open connects to etcd at endpoints, creates the cluster id if this is a
// new cluster, loads the cache and starts its watch. prefix "" means
// DefaultPrefix; log nil means slog.Default(). ctx bounds only the start;
// when etcd does not answer within it the error wraps
// metadata.ErrUnavailable (the caller may try again). opts add TLS and
// etcd authentication; a refused login is not ErrUnavailable.
func Open(ctx context.Context, endpoints []string, prefix string, log *slog.Logger, opts ...Option) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "etcdstore")
	// The client logs every retry at warn; only its errors are news.
	cfg := clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		Logger:               newZapLogger(log, zapcore.ErrorLevel, nil),
		// Above the largest write (checkSize), so that the server, not
		// the client's gRPC, judges a request too large.
		MaxCallSendMsgSize: 2 * maxRequestBytes,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: reconnectMaxDelay},
			MinConnectTimeout: dialTimeout,
		})},
	}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: connect %v: %w", endpoints, err)
	}
	s := &Store{
		cli:   cli,
		keys:  newKeys(prefix),
		log:   log,
		cache: metadata.NewCache(),
		regs:  make(map[*registration]struct{}),
	}
	s.outage = &outage{log: log, leases: s.leaseDeadline}
	if err := s.ensureClusterID(ctx); err != nil {
		_ = cli.Close()
		return nil, unavailable(err)
	}
	rev, err := s.load(ctx)
	if err != nil {
		_ = cli.Close()
		return nil, unavailable(err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	s.stopWatch, s.watchDone = cancel, make(chan struct{})
	go s.watchLoop(wctx, rev)
	return s, nil
}

// ensureClusterID reads the cluster id, creating it in a txn if this is
// the first start of the cluster. An existing id is read without a write,
// so a store whose etcd refuses writes (NOSPACE) still opens.
func (s *Store) ensureClusterID(ctx context.Context) error {
	key, fresh := s.keys.clusterID(), metadata.NewTopicID().String()
	if got, err := s.cli.Get(ctx, key); err != nil {
		return fmt.Errorf("etcdstore: read cluster id: %w", err)
	} else if len(got.Kvs) > 0 {
		s.clusterID = string(got.Kvs[0].Value)
		return nil
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, fresh)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return writeErr("ensure cluster id", err)
	}
	if resp.Succeeded {
		s.clusterID = fresh
		s.log.Info("created cluster id", "cluster_id", fresh)
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return fmt.Errorf("etcdstore: ensure cluster id: key %s vanished", key)
	}
	s.clusterID = string(kvs[0].Value)
	return nil
}

// ClusterID is the id created on the cluster's first start (22 base64url
// characters, the form Kafka uses).
func (s *Store) ClusterID() string { return s.clusterID }

// Cache is the watch-fed view of everything under the prefix. It is
// loaded before Open returns.
func (s *Store) Cache() *metadata.Cache { return s.cache }

// Close withdraws open broker registrations, stops the watch, closes the
// cache and the connection. Idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	regs := make([]*registration, 0, len(s.regs))
	for r := range s.regs {
		regs = append(regs, r)
	}
	s.mu.Unlock()
	var errs []error
	for _, r := range regs {
		errs = append(errs, r.Close())
	}
	s.stopWatch()
	<-s.watchDone
	s.cache.Close()
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, fmt.Errorf("etcdstore: close client: %w", err))
	}
	return errors.Join(errs...)
}

// checkOpen fails fast once the store is closed.
func (s *Store) checkOpen(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("etcdstore: %s: %w", op, metadata.ErrClosed)
	}
	return nil
}

// visible waits until the store's own cache has applied rev, so that a
// write followed by a cache read sees the write. See metadata.Topics for
// what an error here means.
func (s *Store) visible(ctx context.Context, op string, rev int64) (int64, error) {
	if err := s.cache.WaitRevision(ctx, rev); err != nil {
		return rev, fmt.Errorf("etcdstore: %s committed at revision %d, cache not caught up: %w", op, rev, err)
	}
	return rev, nil
}
