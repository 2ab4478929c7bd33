package sasl

import (
	"context"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// jwksServer serves a replaceable JWKS document on loopback and counts
// the fetches.
type jwksServer struct {
	*httptest.Server
	doc     atomic.Pointer[[]byte]
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, doc []byte) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.doc.Store(&doc)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(*s.doc.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

func oauthOver(t *testing.T, cfg JWKSConfig) *OAuthBearer {
	t.Helper()
	keys, err := NewJWKS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOAuthBearer(OAuthBearerConfig{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func authenticate(t *testing.T, o *OAuthBearer, kid string, key *rsa.PrivateKey) error {
	t.Helper()
	token := sign(t, jwt.SigningMethodRS256, kid, key, goodClaims())
	return exchange(t, oauth.Auth{Token: token}.AsMechanism(), o.NewSession())
}

// TestJWKSEndpointRotation checks that a token signed by a key the cached
// set lacks makes the set be re-read from the endpoint.
func TestJWKSEndpointRotation(t *testing.T) {
	srv := newJWKSServer(t, jwksDoc(rsaJWK("k1", &sharedKeys.rsa.PublicKey)))
	o := oauthOver(t, JWKSConfig{URL: srv.URL, MinRefreshInterval: -1})
	if err := authenticate(t, o, "k1", sharedKeys.rsa); err != nil {
		t.Fatal(err)
	}
	rotated := jwksDoc(rsaJWK("k2", &sharedKeys.other.PublicKey))
	srv.doc.Store(&rotated)
	if err := authenticate(t, o, "k2", sharedKeys.other); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	// k1 is gone from the endpoint: refused after one more look.
	if err := authenticate(t, o, "k1", sharedKeys.rsa); err == nil {
		t.Fatal("key removed from the JWKS still accepted")
	}
}

// TestJWKSUnknownKidRateLimited checks that tokens naming unknown keys do
// not make every session fetch the set.
func TestJWKSUnknownKidRateLimited(t *testing.T) {
	srv := newJWKSServer(t, jwksDoc(rsaJWK("k1", &sharedKeys.rsa.PublicKey)))
	o := oauthOver(t, JWKSConfig{URL: srv.URL}) // default bound: 10s
	if err := o.cfg.Keys.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := authenticate(t, o, "nope", sharedKeys.rsa); err == nil {
			t.Fatal("unknown kid accepted")
		}
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

// TestJWKSConcurrentFirstUse checks that sessions needing the set at once
// share one fetch.
func TestJWKSConcurrentFirstUse(t *testing.T) {
	srv := newJWKSServer(t, jwksDoc(rsaJWK("k1", &sharedKeys.rsa.PublicKey)))
	o := oauthOver(t, JWKSConfig{URL: srv.URL})
	token := sign(t, jwt.SigningMethodRS256, "k1", sharedKeys.rsa, goodClaims())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			s := o.NewSession()
			_, err := s.Evaluate(context.Background(), []byte("n,,\x01auth=Bearer "+token+"\x01\x01"))
			if err == nil && !s.Done() {
				err = context.Canceled
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

func TestJWKSSources(t *testing.T) {
	path := writeJWKS(t, defaultJWKS())
	for _, url := range []string{path, "file://" + path} {
		j, err := NewJWKS(JWKSConfig{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Load(context.Background()); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		if n := len(j.keys.Load().keys); n != 4 {
			t.Fatalf("%s: %d keys, want 4 (oct and enc skipped)", url, n)
		}
	}
	for _, tc := range []struct{ url, want string }{
		{"ftp://example/jwks", "unsupported URL scheme"},
		{writeJWKS(t, []byte("not json")), "not a JWKS"},
		{writeJWKS(t, []byte(`{"keys":[]}`)), "no usable signature key"},
		{writeJWKS(t, []byte(`{"keys":[{"kty":"RSA","kid":"small","n":"AQAB","e":"AQAB"}]}`)), "at least 2048 bits"},
		{writeJWKS(t, []byte(`{"keys":[{"kty":"EC","kid":"bad","crv":"P-256","x":"AAAA","y":"AAAA"}]}`)), "EC x or y"},
		{writeJWKS(t, []byte(`{"keys":[{"kty":"EC","kid":"bad","crv":"secp256k1","x":"AAAA","y":"AAAA"}]}`)), "not supported"},
		{t.TempDir() + "/missing.json", "no such file"},
	} {
		j, err := NewJWKS(JWKSConfig{URL: tc.url})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Load(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.url, err, tc.want)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	j, _ := NewJWKS(JWKSConfig{URL: srv.URL})
	if err := j.Load(context.Background()); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404 endpoint: %v", err)
	}
	if _, err := NewJWKS(JWKSConfig{}); err == nil {
		t.Error("empty URL accepted")
	}
}

// TestJWKSEndpointDownKeepsKeys checks that a failing re-read keeps the
// keys already read.
func TestJWKSEndpointDownKeepsKeys(t *testing.T) {
	srv := newJWKSServer(t, jwksDoc(rsaJWK("k1", &sharedKeys.rsa.PublicKey)))
	o := oauthOver(t, JWKSConfig{URL: srv.URL, MinRefreshInterval: -1})
	if err := authenticate(t, o, "k1", sharedKeys.rsa); err != nil {
		t.Fatal(err)
	}
	broken := []byte("<html>")
	srv.doc.Store(&broken)
	if err := authenticate(t, o, "k9", sharedKeys.rsa); err == nil || !strings.Contains(err.Error(), "not a JWKS") {
		t.Fatalf("unknown kid with the endpoint broken: %v", err)
	}
	if err := authenticate(t, o, "k1", sharedKeys.rsa); err != nil {
		t.Fatalf("known key after a failed re-read: %v", err)
	}
}
