package handler

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake: v0-1
//
// Behavior:
//   - Answers with the listener's enabled mechanisms (sasl.enabled.mechanisms)
//     and starts the exchange of the one the client names.
//   - A mechanism not enabled is UNSUPPORTED_SASL_MECHANISM; it counts as a
//     failed authentication: answered after
//     connection.failed.authentication.delay.ms, and the connection closed.
//   - v0: the client then sends its SASL tokens as bare size-prefixed
//     frames, and gets bare ones back (kafka-python 2.0); v1: in
//     SaslAuthenticate requests.
//   - On an authenticated connection whose client sent SaslAuthenticate
//     v1+ (KIP-368), starts a re-authentication, which must use the same
//     mechanism (else UNSUPPORTED_SASL_MECHANISM and the connection closed);
//     otherwise ILLEGAL_SASL_STATE, as Kafka's request handler answers.
//   - On a listener without SASL, or in the middle of an exchange:
//     ILLEGAL_SASL_STATE (the middle of an exchange also closes).
func handleSaslHandshake(ctx context.Context, _ *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	a := req.auth()
	if a == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return Result{Resp: resp}, nil
	}
	resp.SupportedMechanisms = a.names()
	switch a.stage {
	case awaitAuthenticate:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return Result{Resp: resp, Close: true}, nil
	case authenticated:
		if !a.reauth {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return Result{Resp: resp}, nil
		}
		if r.Mechanism != a.mech.Name() {
			a.fail(ctx, authFailure(r.Mechanism, "SASL mechanism '"+r.Mechanism+"' requested by client is not supported for re-authentication of mechanism '"+a.mech.Name()+"'"))
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			return Result{Resp: resp, Close: true}, nil
		}
	}
	i := slices.IndexFunc(a.Mechanisms, func(m saslMechanism) bool { return m.Name() == r.Mechanism })
	if i < 0 {
		a.fail(ctx, authFailure(r.Mechanism, "Unsupported SASL mechanism "+r.Mechanism))
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return Result{Resp: resp, Close: true}, nil
	}
	a.mech = a.Mechanisms[i]
	a.session = a.mech.NewSession()
	a.stage = awaitAuthenticate
	a.raw = r.Version == 0
	return Result{Resp: resp}, nil
}
