package broker

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"syscall"
	"time"

	"github.com/strata-broker/strata/broker/quota"
	"github.com/strata-broker/strata/broker/security"
	"github.com/strata-broker/strata/config"
)

// Pauses between retries of an accept that failed for a reason that
// passes (no file descriptor or memory free): doubling from the first
// to the last, as net/http's Server does.
const (
	acceptPauseFirst = 5 * time.Millisecond
	acceptPauseLast  = time.Second
)

// clients is what the Kafka listener's connections share: their quotas
// (max.connections, max.connections.per.ip), the memory of their request
// frames (queued.max.request.bytes), the rate limit of their log lines,
// and connections.max.idle.ms.
type clients struct {
	quotas *connQuotas
	mem    *requestMemory
	log    *slog.Logger // Warn and above rate-limited over all connections
	idle   time.Duration
	// rates holds connection_creation_rate per ip; nil: none.
	rates *quota.Manager
}

func newClients(ctx context.Context, cfg *config.Broker, log *slog.Logger) (*clients, error) {
	q, err := newConnQuotas(ctx, cfg)
	if err != nil {
		return nil, err
	}
	idle := time.Duration(-1)
	if cfg.ConnectionsMaxIdleMs >= 0 {
		idle = time.Duration(min(cfg.ConnectionsMaxIdleMs, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	}
	return &clients{
		quotas: q,
		mem:    newRequestMemory(cfg.QueuedMaxRequestBytes),
		log:    slog.New(limitedHandler{log.Handler(), newLogLimit()}),
		idle:   idle,
	}, nil
}

// accept returns the next connection to serve. It waits while
// max.connections are open (the kernel queues new ones meanwhile, as
// Kafka's acceptor does), unless the listener is protected, retries a
// failure that passes (EMFILE and its kin) after a pause instead of
// giving up, and closes at once a connection from an address that has
// its max.connections.per.ip open. It fails when ctx ends or the
// listener fails for good.
func (cl *clients) accept(ctx context.Context, ln net.Listener, protected bool) (net.Conn, error) {
	var pause time.Duration
	for {
		if !protected { // a protected listener's connections count, but never wait
			if err := cl.quotas.waitSlot(ctx); err != nil {
				return nil, err
			}
		}
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || !passingAcceptError(err) {
				return nil, err
			}
			pause = min(max(2*pause, acceptPauseFirst), acceptPauseLast)
			cl.log.Warn("accept failed; retrying", "err", err, "pause", pause)
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
			continue
		}
		pause = 0
		if d := cl.rates.RecordConnection(remoteAddr(c), time.Now()); d > 0 {
			// As Kafka: the connection is closed once the throttle passed.
			cl.log.Warn("closing connection: its address is over its connection_creation_rate", "remote", c.RemoteAddr().String(), "throttle", d)
			time.AfterFunc(d, func() { _ = c.Close() })
			continue
		}
		if limit, ok := cl.quotas.admit(remoteAddr(c)); !ok {
			cl.log.Warn("closing connection: its address has max.connections.per.ip open", "remote", c.RemoteAddr().String(), "max", limit)
			_ = c.Close()
			continue
		}
		return c, nil
	}
}

// passingAcceptError reports whether a failed accept may succeed when
// retried: the process or system is out of file descriptors or buffer
// memory, or (Linux, accept(2)) a network error of the connection being
// accepted surfaced there.
func passingAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{
		syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.EPROTO, syscall.ENOPROTOOPT, syscall.EHOSTDOWN, syscall.EHOSTUNREACH,
		syscall.EOPNOTSUPP, syscall.ENETUNREACH, syscall.ENETDOWN, syscall.EPERM, syscall.ECONNABORTED,
	} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// kafkaListener is one bound listener of the Kafka protocol.
type kafkaListener struct {
	cfg  config.Listener
	ln   net.Listener
	tls  *security.Server // the SSL side; nil: plaintext
	sasl *listenerSASL    // the SASL side; nil: no SASL
}

// protected reports whether max.connections does not hold back kl's
// connections: as in Kafka, those of the inter-broker listener when there
// are several listeners, so that replication goes on when clients take
// every connection.
func (n *node) protected(kl *kafkaListener, interBroker string) bool {
	return kl.cfg.Name == interBroker && len(n.kafkaLns) > 1
}

// boundAddrs are the listeners' bound addresses by name.
func (n *node) boundAddrs() map[string]string {
	out := make(map[string]string, len(n.kafkaLns))
	for _, kl := range n.kafkaLns {
		out[kl.cfg.Name] = kl.ln.Addr().String()
	}
	return out
}
