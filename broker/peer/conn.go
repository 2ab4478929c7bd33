package peer

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/strata-broker/strata/broker/wire"
)

const (
	// maxFrame bounds a response frame from another broker.
	maxFrame = 256 << 20
	// requestTimeout bounds one request when its ctx has no earlier
	// deadline.
	requestTimeout = 30 * time.Second
)

// Conn is one connection to another broker, for one goroutine at a time.
// Requests carry the version their caller set: both ends are Strata, so
// nothing is negotiated.
type Conn struct {
	conn net.Conn
	br   *bufio.Reader
	fmt  *kmsg.RequestFormatter
	corr int32
	// buf is the last response frame, reused for the next one: a
	// response's byte fields alias it, so they are valid only until the
	// next request.
	buf []byte
	// mech and host re-authenticate the connection (nil mech: no SASL)
	// once reauthAt passes (zero: never).
	mech     sasl.Mechanism
	host     string
	reauthAt time.Time
}

// Dial connects to the broker at addr in plaintext; its requests carry
// clientID.
func Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	return dial(ctx, addr, clientID, nil, nil)
}

// dial connects to addr, over TLS with cfg unless it is nil, and
// authenticates with mech unless it is nil.
func dial(ctx context.Context, addr, clientID string, cfg *tls.Config, mech sasl.Mechanism) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial broker %s: %w", addr, err)
	}
	if cfg != nil {
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("dial broker %s: TLS handshake: %w", addr, err)
		}
		c = tc
	}
	// A small read buffer: frames are read straight into buf past what
	// the buffer already holds, so bytes are copied once.
	conn := &Conn{conn: c, br: bufio.NewReaderSize(c, 16<<10), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
	if mech != nil {
		conn.mech, conn.host = mech, addr
		if err := conn.authenticate(ctx, mech, addr); err != nil {
			conn.Close()
			return nil, fmt.Errorf("dial broker %s: %w", addr, err)
		}
	}
	return conn, nil
}

// Request sends req (its version already set) and reads its response,
// whose byte fields stay valid until the next request. A connection whose
// SASL session is near its end re-authenticates first. Any error leaves
// the connection unusable.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if c.mech != nil && !c.reauthAt.IsZero() && !time.Now().Before(c.reauthAt) {
		if err := c.authenticate(ctx, c.mech, c.host); err != nil {
			return nil, fmt.Errorf("re-authenticate: %w", err)
		}
	}
	return c.request(ctx, req)
}

// request sends req and reads its response.
func (c *Conn) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.corr++
	deadline := time.Now().Add(requestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.conn.Write(c.fmt.AppendRequest(nil, req, c.corr)); err != nil {
		return nil, fmt.Errorf("write %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	frame, err := wire.ReadFrame(c.br, maxFrame, c.buf)
	if err != nil {
		return nil, fmt.Errorf("read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	if corr := int32(binary.BigEndian.Uint32(frame)); corr != c.corr {
		return nil, fmt.Errorf("response correlation id %d, want %d", corr, c.corr)
	}
	c.buf = frame
	resp := req.ResponseKind()
	r := kbin.Reader{Src: frame[4:]}
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) { // its response header never has tags
		kmsg.SkipTags(&r)
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// Close closes the connection.
func (c *Conn) Close() { _ = c.conn.Close() }
