package etcdstore

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"
)

// Embedded-server settings.
const (
	embeddedName         = "strata"
	embeddedStartTimeout = 60 * time.Second
	// A topic write is one txn op per partition (and one for the topic):
	// above metadata.MaxPartitionsPerWrite, as etcd's default of 128 is not.
	embeddedMaxTxnOps = 16384
	// Kafka's topic names and replica lists make a partition key and
	// value at most a few hundred bytes: MaxPartitionsPerWrite of them fit.
	embeddedMaxRequestBytes = maxRequestBytes
	// Keep one hour of history for watches to resume from; older
	// revisions are compacted away so the database does not grow forever.
	embeddedCompactionRetention = "1h"
	// A single member has no peers to lose, so short raft ticks cost
	// nothing but make the first election (and so start-up) quick.
	embeddedTickMs     = 50
	embeddedElectionMs = 500
	// defaultCheckInterval is how often the space guard looks at the disk
	// and the database.
	defaultCheckInterval = time.Second
)

// EmbeddedConfig configures an embedded etcd (StartEmbeddedWith).
type EmbeddedConfig struct {
	// Dir is etcd's data directory, created if needed; an existing one is
	// recovered, keeping all data.
	Dir string
	// QuotaBackendBytes is etcd's --quota-backend-bytes: past it etcd
	// raises its NOSPACE alarm and refuses writes that would grow the
	// database. 0: etcd's default, 2 GiB.
	QuotaBackendBytes int64
	// ReserveBytes is the free space kept on Dir's filesystem (see
	// space.go): while less is free, writes that would grow etcd are
	// refused and AllowWrite refuses the broker's own writes to that
	// disk. 0: no guard.
	ReserveBytes int64
	// CheckInterval is how often the space guard measures the disk and
	// the database; 0: every second.
	CheckInterval time.Duration
	// Log receives etcd's warnings and the guard's news; nil:
	// slog.Default().
	Log *slog.Logger
}

// Embedded is a single-member etcd server running inside this process,
// for single-node deployments and tests. Its space guard (space.go) runs
// on the caller's goroutine (Guard).
type Embedded struct {
	e         *embed.Etcd
	endpoints []string
	mute      *atomic.Bool // silences etcd's logs once Close began
	once      sync.Once
	space     *spaceGuard
}

// StartEmbedded starts a single-member etcd with its data in dir, with
// etcd's default quota and no space guard; see StartEmbeddedWith.
func StartEmbedded(dir string, log *slog.Logger) (*Embedded, error) {
	return StartEmbeddedWith(EmbeddedConfig{Dir: dir, Log: log})
}

// StartEmbeddedWith starts a single-member etcd as cfg says. Client and
// peer listeners bind 127.0.0.1 on OS-chosen ports; Endpoints reports the
// real client address. etcd's own logs at warn and above go to cfg.Log.
// It returns once the server accepts requests and the space guard took
// its first measurement, which lifts a NOSPACE alarm left from before
// when the database fits its quota again (see Guard).
func StartEmbeddedWith(c EmbeddedConfig) (*Embedded, error) {
	log := c.Log
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "etcd")
	dir := c.Dir
	mute := new(atomic.Bool)
	local := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg := embed.NewConfig()
	cfg.Name = embeddedName
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{local}
	cfg.AdvertiseClientUrls = []url.URL{local}
	cfg.ListenPeerUrls = []url.URL{local}
	cfg.AdvertisePeerUrls = []url.URL{local}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger = "zap"
	cfg.LogLevel = "warn"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(log, zapcore.WarnLevel, mute))
	cfg.EnableGRPCGateway = false
	cfg.TickMs, cfg.ElectionMs = embeddedTickMs, embeddedElectionMs
	cfg.MaxTxnOps = embeddedMaxTxnOps
	cfg.MaxRequestBytes = embeddedMaxRequestBytes
	cfg.QuotaBackendBytes = c.QuotaBackendBytes
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = embeddedCompactionRetention

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: start embedded etcd in %s: %w", dir, err)
	}
	timer := time.NewTimer(embeddedStartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		mute.Store(true)
		e.Close()
		return nil, fmt.Errorf("etcdstore: start embedded etcd in %s: %w", dir, err)
	case <-timer.C:
		mute.Store(true)
		e.Close()
		return nil, fmt.Errorf("etcdstore: start embedded etcd in %s: not ready after %s", dir, embeddedStartTimeout)
	}
	m := &Embedded{e: e, mute: mute}
	for _, l := range e.Clients {
		m.endpoints = append(m.endpoints, "http://"+l.Addr().String())
	}
	m.space = newSpaceGuard(e.Server, dir, c, log)
	m.space.check(context.Background(), false)
	return m, nil
}

// Endpoints are the client URLs to pass to Open.
func (m *Embedded) Endpoints() []string { return m.endpoints }

// Err delivers a fatal server error (the server stopped serving).
func (m *Embedded) Err() <-chan error { return m.e.Err() }

// Close stops the server and waits for it to release its directory.
// Stop Guard first. Idempotent.
func (m *Embedded) Close() {
	m.once.Do(func() {
		m.mute.Store(true)
		m.e.Close()
	})
}
