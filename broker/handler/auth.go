package handler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/sasl"
)

// Auth is the SASL state of one connection of a SASL_PLAINTEXT or SASL_SSL
// listener, the part of Kafka's SaslServerAuthenticator that outlives a
// request. It is used only by the connection's reading goroutine: the
// connection checks Allow before each request, and SaslHandshake and
// SaslAuthenticate, which change it, run inline (never Async, no Later).
type Auth struct {
	// Mechanisms are those enabled on the listener, in the order of
	// sasl.enabled.mechanisms.
	Mechanisms []sasl.Mechanism
	// MaxReauth is connections.max.reauth.ms (0: sessions do not expire
	// but with their credential).
	MaxReauth time.Duration
	// FailDelay is connection.failed.authentication.delay.ms: a failed
	// exchange is answered, and the connection closed, after it.
	FailDelay time.Duration
	// Failed, if set, is told of each failed exchange (to log and count).
	Failed func(err error)
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	stage   authStage
	mech    sasl.Mechanism
	session sasl.Session
	// raw: the handshake was v0, so the client sends its tokens as bare
	// size-prefixed frames rather than SaslAuthenticate requests.
	raw bool
	// principal is the authenticated principal ("" before the first
	// success); a re-authentication must yield the same.
	principal string
	// reauth: the client sent SaslAuthenticate v1+, so it may
	// re-authenticate (KIP-368).
	reauth  bool
	expires time.Time // the session's end (zero: none)
}

// authStage is where a connection is in its (re-)authentication.
type authStage int8

const (
	awaitHandshake    authStage = iota // before SaslHandshake
	awaitAuthenticate                  // after SaslHandshake, during the exchange
	authenticated                      // the exchange succeeded
)

// ErrUnauthenticated is the reason a connection is closed for a request
// other than ApiVersions, SaslHandshake and SaslAuthenticate before it
// authenticated or after its session expired.
var ErrUnauthenticated = errors.New("sasl: request not allowed")

func (a *Auth) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Allow reports, before a request with key is handled, whether the
// connection may send it, as Kafka's SaslServerAuthenticator does, which
// closes the connection for anything else: between SaslHandshake and the
// exchange's end only SaslAuthenticate; before authentication, and once
// the session ended, only ApiVersions, SaslHandshake and SaslAuthenticate.
// The connection then sends Refusal, if any, and closes.
func (a *Auth) Allow(key int16) error {
	if a.stage == awaitAuthenticate && key != kmsg.SASLAuthenticate.Int16() {
		return fmt.Errorf("%w: %s during SASL authentication (after SaslHandshake)", ErrUnauthenticated, kmsg.NameForKey(key))
	}
	switch key {
	case kmsg.ApiVersions.Int16(), kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16():
		return nil
	}
	if a.principal == "" {
		return fmt.Errorf("%w: %s before SASL authentication", ErrUnauthenticated, kmsg.NameForKey(key))
	}
	if !a.expires.IsZero() && !a.now().Before(a.expires) {
		return fmt.Errorf("%w: %s after the SASL session expired (connections.max.reauth.ms or the credential's lifetime)", ErrUnauthenticated, kmsg.NameForKey(key))
	}
	return nil
}

// Refusal is the answer to a request with key and version that Allow
// refused between SaslHandshake and the exchange's end: as Kafka does,
// its response with ILLEGAL_SASL_STATE as the top-level error code, after
// which the connection is closed. It is nil (close without an answer) in
// any other stage, for a version not served, and for an API whose
// response carries no top-level error code at that version.
func (a *Auth) Refusal(key, version int16) kmsg.Response {
	if a.stage != awaitAuthenticate || key == kmsg.SASLAuthenticate.Int16() || !Supported(key, version) {
		return nil
	}
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		return nil
	}
	f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 {
		return nil
	}
	resp.SetVersion(version)
	without := resp.AppendTo(nil)
	f.SetInt(int64(kerr.IllegalSaslState.Code))
	if bytes.Equal(without, resp.AppendTo(nil)) {
		return nil // the field is not in this version
	}
	return resp
}

// RawTokens reports whether the connection's next frame is a bare SASL
// token (after a v0 SaslHandshake) rather than a request.
func (a *Auth) RawTokens() bool { return a.raw && a.stage == awaitAuthenticate }

// RawToken evaluates a bare token of a v0 client and returns the bare
// reply to send (size-prefixed by the caller); an error fails the
// exchange, after FailDelay, and the connection is closed without a reply,
// as Kafka does for such clients.
func (a *Auth) RawToken(ctx context.Context, token []byte) ([]byte, error) {
	out, _, err := a.evaluate(ctx, token)
	if err != nil {
		a.fail(ctx, err)
		return nil, err
	}
	return out, nil
}

// names lists the enabled mechanisms.
func (a *Auth) names() []string {
	out := make([]string, len(a.Mechanisms))
	for i, m := range a.Mechanisms {
		out[i] = m.Name()
	}
	return out
}

// evaluate feeds one client message to the session and, when the exchange
// completes, checks a re-authentication's principal and sets the
// session's end; it returns the server's reply and the session lifetime
// to report (0: none).
func (a *Auth) evaluate(ctx context.Context, msg []byte) ([]byte, time.Duration, error) {
	out, err := a.session.Evaluate(ctx, msg)
	if err != nil {
		return nil, 0, err
	}
	if !a.session.Done() {
		return out, 0, nil
	}
	p := a.session.Principal().String()
	if a.principal != "" && p != a.principal {
		return nil, 0, &sasl.AuthError{Mechanism: a.mech.Name(), User: a.session.Principal().Name,
			Message: fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", a.principal, p)}
	}
	now := a.now()
	var life time.Duration
	exp := a.session.Expiry()
	switch {
	case !exp.IsZero() && a.MaxReauth > 0:
		life = min(exp.Sub(now), a.MaxReauth)
	case !exp.IsZero():
		life = exp.Sub(now)
	case a.MaxReauth > 0:
		life = a.MaxReauth
	}
	a.expires = time.Time{}
	if !exp.IsZero() || a.MaxReauth > 0 {
		life = max(life, 0)
		a.expires = now.Add(life)
	}
	if a.principal == "" { // a re-authentication keeps it, unwritten: handlers read it
		a.principal = p
	}
	a.stage, a.session, a.raw = authenticated, nil, false
	return out, life, nil
}

// fail reports a failed exchange and waits FailDelay (or until ctx ends).
func (a *Auth) fail(ctx context.Context, err error) {
	a.stage, a.session = awaitHandshake, nil
	if a.Failed != nil {
		a.Failed(err)
	}
	if a.FailDelay <= 0 {
		return
	}
	t := time.NewTimer(a.FailDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Principal is the authenticated principal ("" before authentication).
func (a *Auth) Principal() string { return a.principal }
