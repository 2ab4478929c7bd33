package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// ClientID is the client id of every request a Client sends.
const ClientID = "strata-broker"

// ErrClosed: the Client was closed.
var ErrClosed = errors.New("peer: client closed")

// Client sends requests to other brokers by broker id, at the address
// their registration advertises.
type Client struct {
	cache     *metadata.Cache
	maxIdle   time.Duration
	transport Transport

	mu     sync.Mutex
	idle   map[int32]idleConn
	closed bool
}

// idleConn is a connection kept for the next request to its broker, with
// the address it was dialled at (a restarted broker may move) and when it
// was last used.
type idleConn struct {
	c     *Conn
	addr  string
	since time.Time
}

// NewClient returns a client that finds brokers in cache and reaches them
// through t (the inter-broker listener). A connection
// left idle for maxIdle or longer is not reused but dialled anew (0: no
// limit): brokers close connections idle for connections.max.idle.ms, so
// the broker passes a share of it, as Kafka's clients keep their own idle
// limit below the broker's.
func NewClient(cache *metadata.Cache, maxIdle time.Duration, t Transport) *Client {
	return &Client{cache: cache, maxIdle: maxIdle, transport: t, idle: map[int32]idleConn{}}
}

// Request sends req (its version already set) to broker id and returns
// its response. A failed request's connection is dropped; the caller
// decides whether to retry.
func (c *Client) Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	b, ok := c.cache.Broker(id)
	if !ok {
		return nil, fmt.Errorf("peer: broker %d is not registered", id)
	}
	addr, err := c.transport.Addr(b)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	conn, err := c.take(ctx, b, addr)
	if err != nil {
		return nil, err
	}
	resp, err := conn.Request(ctx, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("peer: broker %d: %w", id, err)
	}
	conn.buf = nil // resp aliases it: the next request reads into a new one
	c.put(id, idleConn{conn, addr, time.Now()})
	return resp, nil
}

// take returns the idle connection to broker b at addr, or dials one.
func (c *Client) take(ctx context.Context, b metadata.Broker, addr string) (*Conn, error) {
	id := b.ID
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	ic, ok := c.idle[id]
	delete(c.idle, id)
	c.mu.Unlock()
	if ok && ic.addr == addr && (c.maxIdle <= 0 || time.Since(ic.since) < c.maxIdle) {
		return ic.c, nil
	}
	if ok {
		ic.c.Close()
	}
	conn, err := c.transport.Dial(ctx, b, ClientID)
	if err != nil {
		return nil, fmt.Errorf("peer: broker %d: %w", id, err)
	}
	return conn, nil
}

// put keeps ic for the next request to broker id, or closes it when
// another is kept already or the client is closed.
func (c *Client) put(id int32, ic idleConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, busy := c.idle[id]; busy || c.closed {
		ic.c.Close()
		return
	}
	c.idle[id] = ic
}

// Close closes the idle connections; requests in flight finish, later
// ones fail with ErrClosed. Idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, ic := range c.idle {
		ic.c.Close()
		delete(c.idle, id)
	}
	return nil
}
