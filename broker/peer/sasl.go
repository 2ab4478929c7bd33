package peer

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// reauthShare is the part of a SASL session's lifetime after which a
// Conn re-authenticates before its next request, as Kafka's clients
// re-authenticate within the lifetime the broker tells them.
const reauthShare = 0.85

// authenticate runs a SASL exchange on c with mech (KIP-152:
// SaslHandshake v1, then SaslAuthenticate v1 until the mechanism is done)
// and notes when the session needs renewing (KIP-368).
func (c *Conn) authenticate(ctx context.Context, mech sasl.Mechanism, host string) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech.Name()
	resp, err := c.request(ctx, hs)
	if err != nil {
		return fmt.Errorf("sasl handshake: %w", err)
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("sasl handshake %s (the broker enables %v): %w", mech.Name(), resp.(*kmsg.SASLHandshakeResponse).SupportedMechanisms, err)
	}
	sess, msg, err := mech.Authenticate(ctx, host)
	if err != nil {
		return fmt.Errorf("sasl %s: %w", mech.Name(), err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, msg
		resp, err := c.request(ctx, req)
		if err != nil {
			return fmt.Errorf("sasl authenticate: %w", err)
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
			if ar.ErrorMessage != nil {
				err = fmt.Errorf("%w: %s", err, *ar.ErrorMessage)
			}
			return fmt.Errorf("sasl %s: %w", mech.Name(), err)
		}
		done, next, err := sess.Challenge(ar.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("sasl %s: %w", mech.Name(), err)
		}
		if done {
			c.reauthAt = time.Time{}
			if ar.SessionLifetimeMillis > 0 {
				life := time.Duration(float64(ar.SessionLifetimeMillis) * reauthShare * float64(time.Millisecond))
				c.reauthAt = time.Now().Add(life)
			}
			return nil
		}
		msg = next
	}
}
