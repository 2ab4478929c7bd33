package sasl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// OAuthBearerConfig configures OAUTHBEARER token validation, with
// Kafka's broker-side keys.
type OAuthBearerConfig struct {
	// Keys verify token signatures (sasl.oauthbearer.jwks.endpoint.url).
	Keys *JWKS
	// ExpectedIssuer is sasl.oauthbearer.expected.issuer: the iss a token
	// must carry; empty means not checked, as in Kafka.
	ExpectedIssuer string
	// ExpectedAudience is sasl.oauthbearer.expected.audience: a token's
	// aud must hold one of these; empty means not checked, as in Kafka.
	ExpectedAudience []string
	// SubClaimName is sasl.oauthbearer.sub.claim.name, the claim naming
	// the principal; empty means "sub".
	SubClaimName string
	// ClockSkew is sasl.oauthbearer.clock.skew.seconds, the leeway for
	// exp, nbf and iat; zero means 30s, negative none.
	ClockSkew time.Duration
}

// oauthAlgorithms are the JWS algorithms accepted: asymmetric signatures
// only, so "none" and HMAC (with a public key as its secret) never pass.
var oauthAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// OAuthBearer is the OAUTHBEARER mechanism (RFC 7628) validating JWTs as
// Kafka's broker-side validator does: signature by a key of the JWKS,
// exp required, nbf and iat if present, each within the clock skew,
// issuer and audience if configured, and the principal from the sub
// claim. The session's expiry is the token's exp.
type OAuthBearer struct {
	cfg    OAuthBearerConfig
	parser *jwt.Parser
}

// NewOAuthBearer returns the mechanism for cfg.
func NewOAuthBearer(cfg OAuthBearerConfig) (*OAuthBearer, error) {
	if cfg.Keys == nil {
		return nil, errors.New("oauthbearer: no JWKS")
	}
	if cfg.SubClaimName == "" {
		cfg.SubClaimName = "sub"
	}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = 30 * time.Second
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(oauthAlgorithms),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithStrictDecoding(),
	}
	if cfg.ClockSkew > 0 {
		opts = append(opts, jwt.WithLeeway(cfg.ClockSkew))
	}
	if cfg.ExpectedIssuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.ExpectedIssuer))
	}
	if len(cfg.ExpectedAudience) > 0 {
		opts = append(opts, jwt.WithAudience(cfg.ExpectedAudience...))
	}
	return &OAuthBearer{cfg: cfg, parser: jwt.NewParser(opts...)}, nil
}

// Name is "OAUTHBEARER".
func (o *OAuthBearer) Name() string { return MechanismOAuthBearer }

// NewSession starts one connection's OAUTHBEARER exchange.
func (o *OAuthBearer) NewSession() Session { return &oauthSession{mech: o} }

// validate checks a token and returns its principal name and expiry.
func (o *OAuthBearer) validate(ctx context.Context, token string) (string, time.Time, error) {
	claims := jwt.MapClaims{}
	_, err := o.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		keys, err := o.cfg.Keys.candidates(ctx, kid, t.Method.Alg())
		if err != nil {
			return nil, err
		}
		set := jwt.VerificationKeySet{}
		for _, k := range keys {
			set.Keys = append(set.Keys, k)
		}
		return set, nil
	})
	if err != nil {
		return "", time.Time{}, err
	}
	name, _ := claims[o.cfg.SubClaimName].(string)
	if strings.TrimSpace(name) == "" {
		return "", time.Time{}, fmt.Errorf("no %q claim naming the principal", o.cfg.SubClaimName)
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return "", time.Time{}, errors.New("no exp claim")
	}
	return name, exp.Time, nil
}

// oauthErrorStatus is the RFC 7628 §3.2.2 error Kafka's broker answers
// an invalid token with.
const oauthErrorStatus = `{"status":"invalid_token"}`

type oauthState int

const (
	oauthWantInitial oauthState = iota
	oauthSentError
	oauthDone
	oauthFailed
)

type oauthSession struct {
	mech   *OAuthBearer
	state  oauthState
	user   string
	expiry time.Time
	// reason is why the token was refused, kept for the failure that
	// follows the error challenge.
	reason error
}

// Evaluate follows Kafka's server: a valid token completes the exchange
// with an empty reply; an invalid one is answered with the JSON error
// challenge, to which the client must reply with a lone %x01, and only
// then does the exchange fail.
func (s *oauthSession) Evaluate(ctx context.Context, msg []byte) ([]byte, error) {
	switch s.state {
	case oauthWantInitial:
		out, err := s.initial(ctx, msg)
		if err != nil {
			s.state = oauthFailed
		}
		return out, err
	case oauthSentError:
		s.state = oauthFailed
		if string(msg) != "\x01" {
			return nil, s.fail(invalidCredentials(MechanismOAuthBearer), fmt.Errorf("client answered the error challenge with %d bytes, not %%x01: %w", len(msg), s.reason))
		}
		return nil, s.fail(oauthErrorStatus, s.reason)
	default:
		s.state = oauthFailed
		return nil, s.fail(invalidCredentials(MechanismOAuthBearer), errExchangeOver)
	}
}

func (s *oauthSession) initial(ctx context.Context, msg []byte) ([]byte, error) {
	r, err := parseOAuthInitialResponse(msg)
	if err != nil {
		return nil, s.fail(invalidCredentials(MechanismOAuthBearer), err)
	}
	name, exp, err := s.mech.validate(ctx, r.token)
	if err != nil {
		s.state, s.reason = oauthSentError, fmt.Errorf("invalid token: %w", err)
		return []byte(oauthErrorStatus), nil
	}
	s.user = name
	if r.authzid != "" && r.authzid != name {
		return nil, s.fail(fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", r.authzid, name), nil)
	}
	s.expiry, s.state = exp, oauthDone
	return nil, nil
}

func (s *oauthSession) fail(msg string, err error) error {
	return &AuthError{Mechanism: MechanismOAuthBearer, User: s.user, Message: msg, Err: err}
}

func (s *oauthSession) Done() bool           { return s.state == oauthDone }
func (s *oauthSession) Principal() Principal { return UserPrincipal(s.user) }
func (s *oauthSession) Expiry() time.Time    { return s.expiry }

// oauthInitialResponse is a parsed RFC 7628 client initial response.
type oauthInitialResponse struct {
	authzid    string
	token      string
	extensions map[string]string
}

// parseOAuthInitialResponse parses
//
//	n,[a=<authzid>],%x01auth=Bearer <token>%x01[<key>=<value>%x01]*%x01
//
// with Kafka's grammar: keys are letters, values printable ASCII, space
// or tab/CR/LF; auth is required, its scheme Bearer (any case) and the
// token of the characters of a JWT's base64url parts and dots. A key
// given twice is an error.
func parseOAuthInitialResponse(msg []byte) (oauthInitialResponse, error) {
	var r oauthInitialResponse
	s := string(msg)
	rest, ok := strings.CutPrefix(s, "n,")
	if !ok {
		if strings.HasPrefix(s, "p=") || strings.HasPrefix(s, "y,") {
			return r, errChannelBinding
		}
		return r, errors.New("initial response does not start with gs2 header n,")
	}
	authz, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return r, errors.New("initial response: gs2 header not terminated")
	}
	if authz != "" {
		z, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return r, fmt.Errorf("initial response: invalid authzid field %q", authz)
		}
		var err error
		if r.authzid, err = scramUnescape(z); err != nil || r.authzid == "" {
			return r, errors.New("initial response: invalid authzid")
		}
	}
	body, ok := strings.CutPrefix(rest, "\x01")
	if !ok || !strings.HasSuffix(body, "\x01") {
		return r, errors.New("initial response: key-value pairs not framed by %x01")
	}
	body = body[:len(body)-1]
	if body == "" || !strings.HasSuffix(body, "\x01") {
		return r, errors.New("initial response: no auth key-value pair")
	}
	kvs := map[string]string{}
	for _, kv := range strings.Split(body[:len(body)-1], "\x01") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !oauthKey(k) || !oauthValue(v) {
			return r, fmt.Errorf("initial response: invalid key-value pair %q", kv)
		}
		if _, dup := kvs[k]; dup {
			return r, fmt.Errorf("initial response: key %q given twice", k)
		}
		kvs[k] = v
	}
	auth, ok := kvs["auth"]
	if !ok {
		return r, errors.New("initial response: no auth key-value pair")
	}
	delete(kvs, "auth")
	scheme, token, ok := strings.Cut(auth, " ")
	token = strings.TrimLeft(token, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || !oauthToken(token) {
		return r, errors.New("initial response: auth is not \"Bearer <token>\"")
	}
	r.token, r.extensions = token, kvs
	return r, nil
}

func oauthKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func oauthValue(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x21 || c > 0x7e) && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

func oauthToken(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}
