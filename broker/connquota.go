package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"sync"

	"github.com/strata-broker/strata/config"
)

// connQuotas counts the Kafka listeners' connections, in total and per
// remote address, against max.connections and max.connections.per.ip
// (and its overrides), as Kafka's ConnectionQuotas does: accepting waits
// while the total is at its limit; a connection from an address at its
// limit is closed at once. As in Kafka, the inter-broker listener's
// connections do not wait when there are several listeners (they still
// count; node.protected); with a single listener none is exempt. The
// limits are dynamic broker configs: follow applies their changes to new
// connections (those open stay, as in Kafka).
type connQuotas struct {
	mu        sync.Mutex
	max       int                // guarded by mu
	perIP     int                // guarded by mu
	overrides map[netip.Addr]int // per address, from max.connections.per.ip.overrides; guarded by mu
	total     int                // open connections; guarded by mu
	byIP      map[netip.Addr]int // open connections per remote address; guarded by mu
	freed     chan struct{}      // closed when a connection ends or the limit grows while accepting waits; guarded by mu
}

// newConnQuotas reads the limits from cfg, resolving the host names of
// the per-address overrides (a name that does not resolve fails the
// start, as in Kafka; one with several addresses limits each).
func newConnQuotas(ctx context.Context, cfg *config.Broker) (*connQuotas, error) {
	overrides, err := resolveOverrides(ctx, cfg.MaxConnectionsPerIPOverrides)
	if err != nil {
		return nil, err
	}
	return &connQuotas{max: int(cfg.MaxConnections), perIP: int(cfg.MaxConnectionsPerIP),
		overrides: overrides, byIP: map[netip.Addr]int{}}, nil
}

// resolveOverrides turns max.connections.per.ip.overrides into limits
// per address. On a host name that does not resolve it fails, with the
// limits of the others.
func resolveOverrides(ctx context.Context, hosts map[string]int32) (map[netip.Addr]int, error) {
	out := map[netip.Addr]int{}
	var errs []error
	for host, n := range hosts {
		if a, err := netip.ParseAddr(host); err == nil {
			out[a.Unmap()] = int(n)
			continue
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			errs = append(errs, fmt.Errorf("max.connections.per.ip.overrides: resolve %s: %w", host, err))
			continue
		}
		for _, a := range addrs {
			out[a.Unmap()] = int(n)
		}
	}
	return out, errors.Join(errs...)
}

// reconfigure takes the limits of cfg for connections accepted from now
// on. A host name that does not resolve keeps no override (the error
// says which).
func (q *connQuotas) reconfigure(ctx context.Context, cfg *config.Broker) error {
	overrides, err := resolveOverrides(ctx, cfg.MaxConnectionsPerIPOverrides)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.max, q.perIP, q.overrides = int(cfg.MaxConnections), int(cfg.MaxConnectionsPerIP), overrides
	if q.freed != nil { // accepting may go on if max grew
		close(q.freed)
		q.freed = nil
	}
	return err
}

// follow applies the changes of the connection limits in live's
// configuration until ctx ends.
func (q *connQuotas) follow(ctx context.Context, live *config.Live, log *slog.Logger) {
	cur := live.Load()
	for {
		ch := live.Changed()
		next := live.Load()
		if next.MaxConnections != cur.MaxConnections || next.MaxConnectionsPerIP != cur.MaxConnectionsPerIP ||
			!maps.Equal(next.MaxConnectionsPerIPOverrides, cur.MaxConnectionsPerIPOverrides) {
			if err := q.reconfigure(ctx, next); err != nil {
				log.Error("connection limits changed, with errors", "err", err)
			}
			log.Info("connection limits changed", "max.connections", next.MaxConnections,
				"max.connections.per.ip", next.MaxConnectionsPerIP, "max.connections.per.ip.overrides", next.Raw["max.connections.per.ip.overrides"])
			cur = next
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// waitSlot returns once a connection may be accepted: fewer than
// max.connections are open. It fails only when ctx ends.
func (q *connQuotas) waitSlot(ctx context.Context) error {
	for {
		q.mu.Lock()
		if q.total < q.max {
			q.mu.Unlock()
			return nil
		}
		if q.freed == nil {
			q.freed = make(chan struct{})
		}
		freed := q.freed
		q.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// admit counts a new connection from addr, unless addr has its limit of
// connections open already: then it reports false and that limit.
func (q *connQuotas) admit(addr netip.Addr) (limit int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	limit = q.perIP
	if n, ok := q.overrides[addr]; ok {
		limit = n
	}
	if q.byIP[addr] >= limit {
		return limit, false
	}
	q.byIP[addr]++
	q.total++
	return limit, true
}

// release uncounts a connection from addr that admit counted.
func (q *connQuotas) release(addr netip.Addr) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.byIP[addr]--; q.byIP[addr] <= 0 {
		delete(q.byIP, addr)
	}
	q.total--
	if q.freed != nil {
		close(q.freed)
		q.freed = nil
	}
}

// open is the number of connections counted.
func (q *connQuotas) open() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}

// remoteAddr is a connection's remote IP address (IPv4 in its 4-byte
// form), or the zero Addr when it has none.
func remoteAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
