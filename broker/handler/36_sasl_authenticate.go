package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/sasl"
)

// SaslAuthenticate: v0-2
//
// Behavior:
//   - Feeds the client's bytes to the exchange SaslHandshake v1 started and
//     answers with the mechanism's reply.
//   - On success the connection's principal becomes the mechanism's
//     (User:<name>). v1+: SessionLifetimeMs is the session's lifetime (KIP-368):
//     connections.max.reauth.ms, or the time left to an OAUTHBEARER token's
//     exp if sooner; 0 when neither bounds it. A re-authentication must
//     yield the same principal.
//   - A failed exchange is SASL_AUTHENTICATION_FAILED with the mechanism's
//     message (no more than Kafka tells: a wrong password and an unknown
//     user read the same), answered after
//     connection.failed.authentication.delay.ms; the connection is then
//     closed.
//   - Without a SaslHandshake first: ILLEGAL_SASL_STATE, and the connection
//     closed; on an authenticated connection (no re-authentication started):
//     ILLEGAL_SASL_STATE, as Kafka's request handler answers.
func handleSaslAuthenticate(ctx context.Context, _ *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	a := req.auth()
	if a == nil || a.stage != awaitAuthenticate || a.raw {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received without a SaslHandshake v1 before it"
		if a != nil && a.stage == authenticated {
			msg = "SaslAuthenticate request received after successful authentication"
		}
		resp.ErrorMessage = &msg
		return Result{Resp: resp, Close: a != nil && a.stage != authenticated}, nil
	}
	if r.Version > 0 {
		a.reauth = true
	}
	mech := a.mech.Name()
	first := a.principal == ""
	out, life, err := a.evaluate(ctx, r.SASLAuthBytes)
	if err != nil {
		a.fail(ctx, err)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := sasl.ClientMessage(err, mech)
		resp.ErrorMessage = &msg
		return Result{Resp: resp, Close: true}, nil
	}
	resp.SASLAuthBytes = out
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if a.stage == authenticated {
		resp.SessionLifetimeMillis = life.Milliseconds()
		if first {
			req.Conn.Principal = a.principal
		}
	}
	return Result{Resp: resp}, nil
}

// saslMechanism is a server-side mechanism.
type saslMechanism = sasl.Mechanism

// authFailure is a failed handshake, in the shape of a mechanism's failure.
func authFailure(mechanism, msg string) error {
	return &sasl.AuthError{Mechanism: mechanism, Message: msg}
}

// auth is the request's connection's SASL state (nil: not a SASL
// listener, or no connection known).
func (r *Request) auth() *Auth {
	if r.Conn == nil {
		return nil
	}
	return r.Conn.SASL
}
