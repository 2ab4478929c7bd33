package broker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/strata-broker/strata/config"
)

// connQuotas counts the Kafka listener's connections, in total and per
// remote address, against max.connections and max.connections.per.ip
// (and its overrides), as Kafka's ConnectionQuotas does: accepting waits
// while the total is at its limit; a connection from an address at its
// limit is closed at once. Strata has one listener, so, as Kafka with a
// single listener, no connection is exempt from max.connections.
type connQuotas struct {
	max       int
	perIP     int
	overrides map[netip.Addr]int // per address, from max.connections.per.ip.overrides

	mu    sync.Mutex
	total int                // open connections; guarded by mu
	byIP  map[netip.Addr]int // open connections per remote address; guarded by mu
	freed chan struct{}      // closed when a connection ends while accepting waits; guarded by mu
}

// newConnQuotas reads the limits from cfg, resolving the host names of
// the per-address overrides (a name that does not resolve fails the
// start, as in Kafka; one with several addresses limits each).
func newConnQuotas(ctx context.Context, cfg *config.Broker) (*connQuotas, error) {
	q := &connQuotas{max: int(cfg.MaxConnections), perIP: int(cfg.MaxConnectionsPerIP),
		overrides: map[netip.Addr]int{}, byIP: map[netip.Addr]int{}}
	for host, n := range cfg.MaxConnectionsPerIPOverrides {
		if a, err := netip.ParseAddr(host); err == nil {
			q.overrides[a.Unmap()] = int(n)
			continue
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: resolve %s: %w", host, err)
		}
		for _, a := range addrs {
			q.overrides[a.Unmap()] = int(n)
		}
	}
	return q, nil
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
	limit = q.perIP
	if n, ok := q.overrides[addr]; ok {
		limit = n
	}
	q.mu.Lock()
	defer q.mu.Unlock()
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
