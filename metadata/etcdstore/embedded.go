package etcdstore

import (
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
	// A topic write is one txn op per partition; etcd's default is 128.
	embeddedMaxTxnOps       = 16384
	embeddedMaxRequestBytes = 8 << 20
	// Keep one hour of history for watches to resume from; older
	// revisions are compacted away so the database does not grow forever.
	embeddedCompactionRetention = "1h"
	// A single member has no peers to lose, so short raft ticks cost
	// nothing but make the first election (and so start-up) quick.
	embeddedTickMs     = 50
	embeddedElectionMs = 500
)

// Embedded is a single-member etcd server running inside this process,
// for single-node deployments and tests.
type Embedded struct {
	e         *embed.Etcd
	endpoints []string
	mute      *atomic.Bool // silences etcd's logs once Close began
	once      sync.Once
}

// StartEmbedded starts a single-member etcd with its data in dir (created
// if needed; an existing dir is recovered, keeping all data). Client and
// peer listeners bind 127.0.0.1 on OS-chosen ports; Endpoints reports the
// real client address. etcd's own logs at warn and above go to log (nil:
// slog.Default()). It returns once the server accepts requests.
func StartEmbedded(dir string, log *slog.Logger) (*Embedded, error) {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "etcd")
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
	return m, nil
}

// Endpoints are the client URLs to pass to Open.
func (m *Embedded) Endpoints() []string { return m.endpoints }

// Err delivers a fatal server error (the server stopped serving).
func (m *Embedded) Err() <-chan error { return m.e.Err() }

// Close stops the server and waits for it to release dir. Idempotent.
func (m *Embedded) Close() {
	m.once.Do(func() {
		m.mute.Store(true)
		m.e.Close()
	})
}
