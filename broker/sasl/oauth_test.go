package sasl

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// testKeys are signing keys and the JWKS that publishes their public
// halves.
type testKeys struct {
	rsa   *rsa.PrivateKey
	ec    *ecdsa.PrivateKey
	ed    ed25519.PrivateKey
	other *rsa.PrivateKey // not in the JWKS
}

var sharedKeys = func() *testKeys {
	k := &testKeys{}
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		panic(err)
	}
	return k
}()

var b64u = base64.RawURLEncoding

func rsaJWK(kid string, pub *rsa.PublicKey) map[string]string {
	return map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": b64u.EncodeToString(pub.N.Bytes()), "e": b64u.EncodeToString(big.NewInt(int64(pub.E)).Bytes())}
}

func ecJWK(kid string, pub *ecdsa.PublicKey) map[string]string {
	b, err := pub.Bytes()
	if err != nil {
		panic(err)
	}
	n := (len(b) - 1) / 2
	return map[string]string{"kty": "EC", "kid": kid, "crv": "P-256",
		"x": b64u.EncodeToString(b[1 : 1+n]), "y": b64u.EncodeToString(b[1+n:])}
}

func jwksDoc(keys ...map[string]string) []byte {
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		panic(err)
	}
	return b
}

// defaultJWKS is the JWKS document of sharedKeys (not other), with keys
// that must be skipped alongside.
func defaultJWKS() []byte {
	k := sharedKeys
	anyAlg := rsaJWK("rsa-any", &k.rsa.PublicKey)
	delete(anyAlg, "alg")
	return jwksDoc(
		rsaJWK("rsa1", &k.rsa.PublicKey),
		anyAlg,
		ecJWK("ec1", &k.ec.PublicKey),
		map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": "ed1", "x": b64u.EncodeToString(k.ed.Public().(ed25519.PublicKey))},
		map[string]string{"kty": "oct", "kid": "hmac1", "k": "c2VjcmV0"},
		map[string]string{"kty": "RSA", "kid": "enc1", "use": "enc", "n": "AQAB", "e": "AQAB"},
	)
}

func writeJWKS(t *testing.T, doc []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	testIssuer   = "https://idp.example"
	testAudience = "strata"
)

func newTestOAuth(t *testing.T, mutate func(*OAuthBearerConfig)) *OAuthBearer {
	t.Helper()
	keys, err := NewJWKS(JWKSConfig{URL: writeJWKS(t, defaultJWKS())})
	if err != nil {
		t.Fatal(err)
	}
	cfg := OAuthBearerConfig{Keys: keys, ExpectedIssuer: testIssuer, ExpectedAudience: []string{"other", testAudience}}
	if mutate != nil {
		mutate(&cfg)
	}
	o, err := NewOAuthBearer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// goodClaims are claims that pass newTestOAuth's checks.
func goodClaims() jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"sub": "alice", "iss": testIssuer, "aud": []string{testAudience},
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func sign(t *testing.T, method jwt.SigningMethod, kid string, key crypto.PrivateKey, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bearer(zid, token string) oauth.Auth { return oauth.Auth{Zid: zid, Token: token} }

func TestOAuthBearerFranzGo(t *testing.T) {
	o := newTestOAuth(t, nil)
	k := sharedKeys
	claims := goodClaims()
	for name, token := range map[string]string{
		"RS256":        sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, claims),
		"PS384":        sign(t, jwt.SigningMethodPS384, "rsa-any", k.rsa, claims),
		"ES256":        sign(t, jwt.SigningMethodES256, "ec1", k.ec, claims),
		"EdDSA":        sign(t, jwt.SigningMethodEdDSA, "ed1", k.ed, claims),
		"ES256 no kid": sign(t, jwt.SigningMethodES256, "", k.ec, claims),
	} {
		for _, zid := range []string{"", "alice"} {
			s := o.NewSession()
			if err := exchange(t, oauth.Auth{Zid: zid, Token: token, Extensions: map[string]string{"traceid": "abc 1"}}.AsMechanism(), s); err != nil {
				t.Fatalf("%s, zid %q: %v", name, zid, err)
			}
			exp := time.Unix(claims["exp"].(int64), 0)
			if s.Principal().String() != "User:alice" || !s.Expiry().Equal(exp) {
				t.Fatalf("%s: principal %s expiry %v, want User:alice %v", name, s.Principal(), s.Expiry(), exp)
			}
		}
	}
}

func TestOAuthBearerSubClaimAndSkew(t *testing.T) {
	o := newTestOAuth(t, func(c *OAuthBearerConfig) { c.SubClaimName = "client_id" })
	claims := goodClaims()
	claims["client_id"] = "svc-1"
	claims["exp"] = time.Now().Add(-10 * time.Second).Unix() // within the default 30s skew
	s := o.NewSession()
	if err := exchange(t, bearer("", sign(t, jwt.SigningMethodRS256, "rsa1", sharedKeys.rsa, claims)).AsMechanism(), s); err != nil {
		t.Fatal(err)
	}
	if s.Principal().String() != "User:svc-1" {
		t.Fatalf("principal %s", s.Principal())
	}
}

func TestOAuthBearerRefused(t *testing.T) {
	o := newTestOAuth(t, nil)
	k := sharedKeys
	with := func(key string, v any) jwt.MapClaims {
		c := goodClaims()
		if v == nil {
			delete(c, key)
		} else {
			c[key] = v
		}
		return c
	}
	now := time.Now()
	noneToken, err := jwt.NewWithClaims(jwt.SigningMethodNone, goodClaims()).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	// An HMAC token keyed with the RSA public key's bytes: the classic
	// algorithm-confusion attack.
	hmacToken := sign(t, jwt.SigningMethodHS256, "rsa1", k.rsa.PublicKey.N.Bytes(), goodClaims())
	for _, tc := range []struct{ name, token, reason string }{
		{"wrong audience", sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, with("aud", "someone-else")), "audience"},
		{"no audience", sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, with("aud", nil)), "aud"},
		{"wrong issuer", sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, with("iss", "https://evil.example")), "issuer"},
		{"expired", sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, with("exp", now.Add(-time.Hour).Unix())), "expired"},
		{"no exp", sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, with("exp", nil)), "exp"},
		{"not yet valid", sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, with("nbf", now.Add(time.Hour).Unix())), "not valid yet"},
		{"issued in the future", sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, with("iat", now.Add(time.Hour).Unix())), "before issued"},
		{"no sub", sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, with("sub", nil)), `"sub" claim`},
		{"unknown kid", sign(t, jwt.SigningMethodRS256, "rsa9", k.rsa, goodClaims()), `no key with id "rsa9"`},
		{"bad signature", sign(t, jwt.SigningMethodRS256, "rsa1", k.other, goodClaims()), "verification error"},
		{"alg none", noneToken, "signing method none is invalid"},
		{"HS256 with the public key", hmacToken, "signing method HS256 is invalid"},
		{"alg other than the key's", sign(t, jwt.SigningMethodPS384, "rsa1", k.rsa, goodClaims()), `no key with id "rsa1"`},
		{"EC alg on an RSA kid", sign(t, jwt.SigningMethodES256, "rsa1", k.ec, goodClaims()), `no key with id "rsa1"`},
		{"tampered payload", tamper(sign(t, jwt.SigningMethodRS256, "rsa1", k.rsa, goodClaims())), "verification error"},
	} {
		// The first reply is the JSON error challenge, not a failure.
		s := o.NewSession()
		first, err := s.Evaluate(context.Background(), []byte("n,,\x01auth=Bearer "+tc.token+"\x01\x01"))
		if err != nil || string(first) != `{"status":"invalid_token"}` || s.Done() {
			t.Errorf("%s: first reply %q, %v", tc.name, first, err)
			continue
		}
		// Through franz-go: the client answers %x01 and the exchange fails
		// with the JSON as its message.
		err = exchange(t, bearer("", tc.token).AsMechanism(), o.NewSession())
		if err == nil || errors.Is(err, errClient) || clientMessage(t, err) != `{"status":"invalid_token"}` {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: logged reason %q lacks %q", tc.name, err, tc.reason)
		}
	}
}

// tamper changes the token's payload, keeping its signature.
func tamper(token string) string {
	parts := strings.Split(token, ".")
	payload, _ := b64u.DecodeString(parts[1])
	parts[1] = b64u.EncodeToString([]byte(strings.Replace(string(payload), `"alice"`, `"admin"`, 1)))
	return strings.Join(parts, ".")
}

func TestOAuthBearerAuthzidAndProtocol(t *testing.T) {
	o := newTestOAuth(t, nil)
	token := sign(t, jwt.SigningMethodRS256, "rsa1", sharedKeys.rsa, goodClaims())
	err := exchange(t, bearer("admin", token).AsMechanism(), o.NewSession())
	if err == nil || !strings.Contains(clientMessage(t, err), "different from the token's principal name") {
		t.Fatalf("authzid admin for alice's token: %v", err)
	}

	// After the error challenge, anything but %x01 fails too.
	s := o.NewSession()
	if _, err := s.Evaluate(context.Background(), []byte("n,,\x01auth=Bearer x.y.z\x01\x01")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Evaluate(context.Background(), []byte("n,,\x01auth=Bearer "+token+"\x01\x01")); err == nil || s.Done() {
		t.Fatalf("a second initial response after the error challenge: %v", err)
	}

	// A malformed initial response fails at once.
	for _, msg := range []string{"", "\x01", "n,,auth=Bearer x\x01\x01", "p=tls-server-end-point,,\x01auth=Bearer x\x01\x01"} {
		s := o.NewSession()
		if out, err := s.Evaluate(context.Background(), []byte(msg)); err == nil || out != nil {
			t.Errorf("initial response %q: %q, %v", msg, out, err)
		}
	}
}

func TestParseOAuthInitialResponse(t *testing.T) {
	r, err := parseOAuthInitialResponse([]byte("n,a=user=2Cx,\x01auth=bearer   a.b-c_d\x01traceid=x y\x01\x01"))
	if err != nil || r.authzid != "user,x" || r.token != "a.b-c_d" || r.extensions["traceid"] != "x y" || len(r.extensions) != 1 {
		t.Fatalf("got %+v, %v", r, err)
	}
	for _, msg := range []string{
		"n,,\x01\x01",                                   // no auth
		"n,,\x01auth=Bearer a\x01",                      // not terminated
		"n,,\x01auth=Basic a\x01\x01",                   // scheme
		"n,,\x01auth=Bearer a b\x01\x01",                // token characters
		"n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01", // duplicate
		"n,,\x01auth=Bearer a\x01k1=v\x01\x01",          // key not letters
		"n,,\x01auth=Bearer a\x01k=\x01\x01",            // empty value
		"n,,\x01auth=Bearer a\x01k=\x00\x01\x01",        // value byte
		"n,x,\x01auth=Bearer a\x01\x01",                 // authzid field
		"y,,\x01auth=Bearer a\x01\x01",                  // gs2 flag
	} {
		if _, err := parseOAuthInitialResponse([]byte(msg)); err == nil {
			t.Errorf("%q accepted", msg)
		}
	}
}
