package config

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
)

// DynamicSource is where a broker reads its dynamic configs: the metadata
// cache (metadata.Cache implements it).
type DynamicSource interface {
	// BrokerConfigs returns the dynamic configs of broker id, or the
	// cluster default for id -1 (nil when there are none). The caller
	// does not modify the map.
	BrokerConfigs(id int32) map[string]string
	// Revision is the store revision the source reflects.
	Revision() int64
	// Changed is closed at the source's next change.
	Changed() <-chan struct{}
}

// clusterDefault is the id DynamicSource.BrokerConfigs takes for the
// cluster default (metadata.ClusterDefault).
const clusterDefault = -1

// Live is a running broker's effective configuration: its static one
// overlaid by the dynamic configs of the metadata store (Effective). One
// goroutine, Follow, recomputes it at every change of the store and
// publishes it; everything else reads it with Load (each *Broker stays
// unchanged, so a reader keeps a consistent snapshot) and, where it holds
// state made from it, follows Changed to rebuild that state. Safe for
// concurrent use.
type Live struct {
	static *Broker
	cur    atomic.Pointer[Broker]

	mu       sync.Mutex
	changed  chan struct{}        // closed and replaced when cur changes
	advanced chan struct{}        // closed and replaced when rev moves
	rev      int64                // the source revision cur reflects
	inputs   [2]map[string]string // the stored layers cur was made from
}

// NewLive returns a Live holding static until it follows a source.
func NewLive(static *Broker) *Live {
	l := &Live{static: static, changed: make(chan struct{}), advanced: make(chan struct{})}
	l.cur.Store(static)
	return l
}

// Load returns the current effective configuration. Do not modify it.
func (l *Live) Load() *Broker { return l.cur.Load() }

// Static returns the configuration the broker started with (file and
// --set), without dynamic configs.
func (l *Live) Static() *Broker { return l.static }

// Changed returns a channel closed at the next change of the effective
// configuration. Typical use: take the channel, Load, act, wait, repeat.
func (l *Live) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Revision is the source revision the current configuration reflects.
func (l *Live) Revision() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rev
}

// WaitRevision blocks until the configuration reflects source revision
// rev (a dynamic config write at rev is applied), or ctx ends.
func (l *Live) WaitRevision(ctx context.Context, rev int64) error {
	for {
		l.mu.Lock()
		cur, ch := l.rev, l.advanced
		l.mu.Unlock()
		if cur >= rev {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("config: wait for dynamic configs of revision %d (at %d): %w", rev, cur, ctx.Err())
		}
	}
}

// Refresh recomputes the configuration from src's dynamic configs for
// broker id (the cluster default, then id's own) and publishes it if it
// changed. It reports what Effective left out, when the stored configs
// changed since the last call. Only one goroutine may call it (Follow).
func (l *Live) Refresh(src DynamicSource, id int32) []error {
	rev := src.Revision() // before the reads: what they return is at least this recent
	in := [2]map[string]string{src.BrokerConfigs(clusterDefault), src.BrokerConfigs(id)}
	l.mu.Lock()
	same := maps.Equal(in[0], l.inputs[0]) && maps.Equal(in[1], l.inputs[1])
	l.mu.Unlock()
	var errs []error
	if !same {
		var next *Broker
		next, errs = l.static.Effective(in[0], in[1])
		l.cur.Store(next)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !same {
		l.inputs = in
		close(l.changed)
		l.changed = make(chan struct{})
	}
	if rev > l.rev {
		l.rev = rev
		close(l.advanced)
		l.advanced = make(chan struct{})
	}
	return errs
}

// Follow keeps the configuration in step with src until ctx ends: it
// refreshes it now and at every change of src, and logs what it applies
// and what it has to leave out.
func (l *Live) Follow(ctx context.Context, src DynamicSource, id int32, log *slog.Logger) {
	for {
		ch := src.Changed()
		before := l.Load()
		for _, err := range l.Refresh(src, id) {
			log.Error("dynamic broker config not applied", "err", err)
		}
		if after := l.Load(); after != before {
			def, own := after.DynamicConfigs()
			log.Info("dynamic broker configs applied", "cluster_default", redacted(def), "broker", redacted(own))
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// redacted copies m with the values of sensitive keys hidden, for logs.
func redacted(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if IsSensitive(k) {
			v = "[hidden]"
		}
		out[k] = v
	}
	return out
}
