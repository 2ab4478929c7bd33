package sasl

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Mechanism names as clients send them in SaslHandshake and as
// sasl.enabled.mechanisms lists them.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
	MechanismOAuthBearer = "OAUTHBEARER"
)

// Mechanism is one configured server-side SASL mechanism. It is shared by
// every connection of a listener and safe for concurrent use; each
// authentication exchange gets its own Session.
type Mechanism interface {
	// Name is the mechanism's name, e.g. "SCRAM-SHA-512".
	Name() string
	// NewSession starts the exchange of one connection.
	NewSession() Session
}

// Session is one connection's authentication exchange, the server half of
// Kafka's SaslServer. It is used by one goroutine, the connection's.
//
// The caller passes each SaslAuthenticate request's bytes to Evaluate and
// answers with the bytes it returns. An error ends the exchange: it is an
// *AuthError (errors.Is(err, ErrAuthenticationFailed)) whose ClientMessage
// is what the client may be told; any bytes returned alongside it are not
// sent. After Done reports true, Principal and Expiry describe the
// authenticated client.
type Session interface {
	// Evaluate consumes the client's next message and returns the server's
	// reply. ctx bounds any credential lookup or key fetch it makes.
	Evaluate(ctx context.Context, client []byte) ([]byte, error)
	// Done reports whether the exchange completed successfully.
	Done() bool
	// Principal is the authenticated principal; valid once Done.
	Principal() Principal
	// Expiry is when the credential the client authenticated with stops
	// being valid (an OAUTHBEARER token's exp), for KIP-368's session
	// lifetime; zero when the mechanism has none. Valid once Done.
	Expiry() time.Time
}

// PrincipalTypeUser is the principal type SASL authentication yields.
const PrincipalTypeUser = "User"

// Principal is an authenticated identity, Kafka's KafkaPrincipal.
type Principal struct {
	Type string
	Name string
}

// UserPrincipal is the principal User:name.
func UserPrincipal(name string) Principal {
	return Principal{Type: PrincipalTypeUser, Name: name}
}

// String is the principal as Kafka writes it in ACLs and logs: "User:alice".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// ErrAuthenticationFailed is matched (errors.Is) by every error a Session
// returns; the protocol edge answers it with SASL_AUTHENTICATION_FAILED.
var ErrAuthenticationFailed = errors.New("sasl authentication failed")

// AuthError is a failed authentication exchange. Message is safe to send
// to the unauthenticated client and says no more than Kafka's would (a
// wrong password and an unknown user read the same); User and Err are for
// the broker's log only.
type AuthError struct {
	Mechanism string
	// User is the user name the client claimed, if it got that far.
	User string
	// Message is the text for the client (SaslAuthenticate's error message).
	Message string
	// Err is the reason, for logs; nil when Message says it all.
	Err error
}

// Error describes the failure in full, for logs.
func (e *AuthError) Error() string {
	s := e.Mechanism + ": " + e.Message
	if e.User != "" {
		s += " (user " + fmt.Sprintf("%q", e.User) + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the logged reason.
func (e *AuthError) Unwrap() error { return e.Err }

// Is makes every AuthError match ErrAuthenticationFailed.
func (e *AuthError) Is(target error) bool { return target == ErrAuthenticationFailed }

// ClientMessage returns the text to send the client for err: an
// AuthError's Message, or a generic one for anything else.
func ClientMessage(err error, mechanism string) string {
	if ae, ok := errors.AsType[*AuthError](err); ok {
		return ae.Message
	}
	return invalidCredentials(mechanism)
}

// invalidCredentials is Kafka's generic answer to a failed exchange whose
// reason must not reach the client.
func invalidCredentials(mechanism string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism
}

// errExchangeOver is the reason when a client keeps talking after the
// exchange ended.
var errExchangeOver = errors.New("message after the exchange ended")

// checkUTF8 returns s if it is valid UTF-8.
func checkUTF8(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", errors.New("not UTF-8")
	}
	return s, nil
}
