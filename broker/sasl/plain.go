package sasl

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Plain is the PLAIN mechanism (RFC 4616) over a fixed set of users, as
// Kafka's PlainServerCallbackHandler serves them from the JAAS options
// user_<name>="<password>". It keeps only each password's SHA-256 and
// compares digests in constant time, so neither a password's content nor
// its length shows in the time a check takes, and an unknown user is
// checked against a digest no password has.
type Plain struct {
	users map[string][sha256.Size]byte
}

// NewPlain serves the users given as name → password.
func NewPlain(users map[string]string) *Plain {
	p := &Plain{users: make(map[string][sha256.Size]byte, len(users))}
	for name, pass := range users {
		p.users[name] = sha256.Sum256([]byte(pass))
	}
	return p
}

// NewPlainFromJAAS serves the users of a PlainLoginModule entry, as given
// in listener.name.<l>.plain.sasl.jaas.config.
func NewPlainFromJAAS(config string) (*Plain, error) {
	e, err := ParseJAASConfig(config)
	if err != nil {
		return nil, err
	}
	users, err := PlainUsers(e)
	if err != nil {
		return nil, err
	}
	return NewPlain(users), nil
}

// PlainUsers returns the users of a PlainLoginModule entry: each option
// user_<name> is the password of <name>.
func PlainUsers(e JAASEntry) (map[string]string, error) {
	if e.LoginModule != PlainLoginModule {
		return nil, fmt.Errorf("jaas config: login module %q, want %s for PLAIN", e.LoginModule, PlainLoginModule)
	}
	users := map[string]string{}
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			if name == "" {
				return nil, errors.New("jaas config: option user_ without a user name")
			}
			users[name] = v
		}
	}
	return users, nil
}

// Name is "PLAIN".
func (p *Plain) Name() string { return MechanismPlain }

// NewSession starts one connection's PLAIN exchange.
func (p *Plain) NewSession() Session { return &plainSession{mech: p} }

// verify reports whether pass is user's password, in time independent of
// the password and of whether the user exists.
func (p *Plain) verify(user, pass string) bool {
	want, known := p.users[user]
	got := sha256.Sum256([]byte(pass))
	eq := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	return eq && known
}

type plainSession struct {
	mech *Plain
	user string
	done bool
	over bool
}

func (s *plainSession) Evaluate(_ context.Context, msg []byte) ([]byte, error) {
	if s.over {
		return nil, s.fail("", invalidCredentials(MechanismPlain), errExchangeOver)
	}
	s.over = true
	authzid, user, pass, err := parsePlain(msg)
	if err != nil {
		return nil, s.fail("", invalidCredentials(MechanismPlain), err)
	}
	switch {
	case user == "":
		return nil, s.fail("", "Authentication failed: username not specified", nil)
	case pass == "":
		return nil, s.fail(user, "Authentication failed: password not specified", nil)
	case !s.mech.verify(user, pass):
		return nil, s.fail(user, "Authentication failed: Invalid username or password", nil)
	case authzid != "" && authzid != user:
		return nil, s.fail(user, "Authentication failed: Client requested an authorization id that is different from username", nil)
	}
	s.user, s.done = user, true
	return nil, nil
}

func (s *plainSession) fail(user, msg string, err error) error {
	return &AuthError{Mechanism: MechanismPlain, User: user, Message: msg, Err: err}
}

func (s *plainSession) Done() bool           { return s.done }
func (s *plainSession) Principal() Principal { return UserPrincipal(s.user) }
func (s *plainSession) Expiry() time.Time    { return time.Time{} }

// parsePlain splits a PLAIN message, [authzid] NUL authcid NUL passwd
// (RFC 4616), which must be UTF-8 and have exactly two NULs.
func parsePlain(msg []byte) (authzid, user, pass string, err error) {
	if !utf8.Valid(msg) {
		return "", "", "", errors.New("PLAIN message is not UTF-8")
	}
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("invalid SASL/PLAIN message: expected 3 tokens, got %d", len(parts))
	}
	return parts[0], parts[1], parts[2], nil
}
