package replica

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/wire"
)

// Versions used between Strata brokers; both ends are Strata, so there
// is nothing to negotiate.
const (
	fetchVersion       = 12 // flexible, by topic name, LastFetchedEpoch
	epochQueryVersion  = 4
	listOffsetsVersion = 8 // the first with the earliest-local timestamp (-4, KIP-405)
	peerMaxFrame       = 256 << 20
	peerRequestTimeout = 30 * time.Second
)

// peer is one connection to a leader, used by one loop goroutine only.
type peer struct {
	conn net.Conn
	br   *bufio.Reader
	fmt  *kmsg.RequestFormatter
	corr int32
	// buf is the last response frame, reused for the next one: a
	// response's byte fields (fetched records) alias it, so they are
	// valid only until the next request.
	buf []byte
}

func dialPeer(ctx context.Context, addr, clientID string) (*peer, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial leader %s: %w", addr, err)
	}
	// A small read buffer: frames are read straight into peer.buf past
	// what the buffer already holds, so bytes are copied once.
	return &peer{conn: c, br: bufio.NewReaderSize(c, 16<<10), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}, nil
}

// request sends req (its version already set) and reads its response,
// which stays valid until the next request. Any error leaves the
// connection unusable.
func (p *peer) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	p.corr++
	deadline := time.Now().Add(peerRequestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = p.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = p.conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := p.conn.Write(p.fmt.AppendRequest(nil, req, p.corr)); err != nil {
		return nil, fmt.Errorf("write %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	frame, err := wire.ReadFrame(p.br, peerMaxFrame, p.buf)
	if err != nil {
		return nil, fmt.Errorf("read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	if corr := int32(binary.BigEndian.Uint32(frame)); corr != p.corr {
		return nil, fmt.Errorf("response correlation id %d, want %d", corr, p.corr)
	}
	p.buf = frame
	resp := req.ResponseKind()
	r := kbin.Reader{Src: frame[4:]}
	if resp.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

func (p *peer) close() { _ = p.conn.Close() }
