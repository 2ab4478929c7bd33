package peer

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/strata-broker/strata/metadata"
)

// Transport is how this broker reaches the others: at their endpoint of
// the inter-broker listener (inter.broker.listener.name), over TLS when
// that listener's protocol uses it, authenticated with SASL when it is
// SASL_PLAINTEXT or SASL_SSL. The zero Transport dials a broker's
// registered Host and Port in plaintext.
type Transport struct {
	// Listener is the inter-broker listener's name ("": Host and Port).
	Listener string
	// TLS returns the client configuration to dial host with; nil:
	// plaintext.
	TLS func(host string) *tls.Config
	// SASL is the mechanism to authenticate with
	// (sasl.mechanism.inter.broker.protocol, with the listener's JAAS
	// username and password); nil: none.
	SASL sasl.Mechanism
}

// Addr is broker b's address on the inter-broker listener; it fails when
// b does not advertise that listener.
func (t Transport) Addr(b metadata.Broker) (string, error) {
	if t.Listener == "" {
		return b.Addr(), nil
	}
	e, ok := b.Endpoint(t.Listener)
	if !ok {
		return "", fmt.Errorf("broker %d advertises no listener %s (the inter-broker listener)", b.ID, t.Listener)
	}
	return e.Addr(), nil
}

// Dial connects to broker b on the inter-broker listener; its requests
// carry clientID.
func (t Transport) Dial(ctx context.Context, b metadata.Broker, clientID string) (*Conn, error) {
	addr, err := t.Addr(b)
	if err != nil {
		return nil, err
	}
	var cfg *tls.Config
	if t.TLS != nil {
		host, _, _ := net.SplitHostPort(addr)
		cfg = t.TLS(host)
	}
	return dial(ctx, addr, clientID, cfg, t.SASL)
}
