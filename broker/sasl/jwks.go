package sasl

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// JWKSConfig says where a JWKS comes from and how often it is re-read.
type JWKSConfig struct {
	// URL is sasl.oauthbearer.jwks.endpoint.url: an https:// or http://
	// endpoint, a file:// URL or a plain file path.
	URL string
	// RefreshInterval is sasl.oauthbearer.jwks.endpoint.refresh.ms: keys
	// older than this are re-read before use. Zero means one hour.
	RefreshInterval time.Duration
	// MinRefreshInterval bounds how often a token with an unknown key id
	// (or a failing endpoint) makes the set be re-read. Zero means 10s;
	// negative means no bound.
	MinRefreshInterval time.Duration
	// HTTPClient fetches endpoint URLs; nil means a client with a 10s
	// timeout.
	HTTPClient *http.Client
}

// maxJWKSBytes bounds a JWKS document.
const maxJWKSBytes = 1 << 20

// JWKS is a cached JSON Web Key Set (RFC 7517) of RSA, EC (P-256, P-384,
// P-521) and Ed25519 signature keys, shared by every OAUTHBEARER session.
//
// Readers take the current set from an atomic pointer without locking.
// A re-read happens when the set is older than RefreshInterval, or when a
// token names a key id the set lacks and the last read is older than
// MinRefreshInterval; refreshMu makes concurrent sessions wait for one
// read rather than each fetching. A failed re-read keeps the old set.
// Nothing runs in the background.
type JWKS struct {
	cfg       JWKSConfig
	keys      atomic.Pointer[jwkSet]
	refreshMu sync.Mutex
	// lastAttempt is the time of the last read, successful or not;
	// guarded by refreshMu.
	lastAttempt time.Time
}

// jwkSet is one read of the key set.
type jwkSet struct {
	keys    []jwk
	fetched time.Time
}

// jwk is one usable verification key.
type jwk struct {
	kid string
	alg string // "" if the JWK does not restrict it
	key crypto.PublicKey
}

// NewJWKS returns a key set read from cfg.URL on first use.
func NewJWKS(cfg JWKSConfig) (*JWKS, error) {
	if cfg.URL == "" {
		return nil, errors.New("jwks: no URL (sasl.oauthbearer.jwks.endpoint.url)")
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = time.Hour
	}
	if cfg.MinRefreshInterval == 0 {
		cfg.MinRefreshInterval = 10 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &JWKS{cfg: cfg}, nil
}

// Load reads the key set now, so that a broker can report a bad JWKS at
// start-up rather than at the first client.
func (j *JWKS) Load(ctx context.Context) error {
	j.refreshMu.Lock()
	defer j.refreshMu.Unlock()
	return j.refreshLocked(ctx)
}

// candidates returns the keys that may have signed a token with header
// kid and alg, re-reading the set if it is stale or lacks kid.
func (j *JWKS) candidates(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	set := j.keys.Load()
	if set == nil || time.Since(set.fetched) > j.cfg.RefreshInterval {
		if err := j.refresh(ctx, set, set != nil); err != nil && set == nil {
			return nil, err
		}
		set = j.keys.Load()
	}
	found := set.match(kid, alg)
	if len(found) == 0 && kid != "" {
		if err := j.refresh(ctx, set, true); err != nil {
			return nil, fmt.Errorf("no key %q for %s: %w", kid, alg, err)
		}
		found = j.keys.Load().match(kid, alg)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no key with id %q for algorithm %s in the JWKS", kid, alg)
	}
	return found, nil
}

// refresh re-reads the set unless another session already replaced seen
// meanwhile; limited bounds it by MinRefreshInterval.
func (j *JWKS) refresh(ctx context.Context, seen *jwkSet, limited bool) error {
	j.refreshMu.Lock()
	defer j.refreshMu.Unlock()
	if cur := j.keys.Load(); cur != seen {
		return nil
	}
	if limited && j.cfg.MinRefreshInterval > 0 && time.Since(j.lastAttempt) < j.cfg.MinRefreshInterval {
		return nil
	}
	return j.refreshLocked(ctx)
}

func (j *JWKS) refreshLocked(ctx context.Context) error {
	j.lastAttempt = time.Now()
	doc, err := j.read(ctx)
	if err != nil {
		return fmt.Errorf("jwks %s: %w", j.cfg.URL, err)
	}
	keys, err := parseJWKS(doc)
	if err != nil {
		return fmt.Errorf("jwks %s: %w", j.cfg.URL, err)
	}
	j.keys.Store(&jwkSet{keys: keys, fetched: time.Now()})
	return nil
}

func (j *JWKS) read(ctx context.Context) ([]byte, error) {
	u, err := url.Parse(j.cfg.URL)
	if err != nil || u.Scheme == "" || u.Scheme == "file" {
		path := j.cfg.URL
		if err == nil && u.Scheme == "file" {
			path = u.Path
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readLimited(f)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("unsupported URL scheme %q", u.Scheme)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := j.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET: %s", resp.Status)
	}
	return readLimited(resp.Body)
}

func readLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxJWKSBytes {
		return nil, fmt.Errorf("document over %d bytes", maxJWKSBytes)
	}
	return b, nil
}

// match returns the keys for a token's kid and alg: those with that id
// (any key if the token names none) whose type fits alg and whose own
// alg, if any, is alg.
func (s *jwkSet) match(kid, alg string) []crypto.PublicKey {
	var out []crypto.PublicKey
	for _, k := range s.keys {
		if (kid != "" && k.kid != kid) || (k.alg != "" && k.alg != alg) || !keyFitsAlg(k.key, alg) {
			continue
		}
		out = append(out, k.key)
	}
	return out
}

func keyFitsAlg(key crypto.PublicKey, alg string) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return k.Curve == elliptic.P256()
		case "ES384":
			return k.Curve == elliptic.P384()
		case "ES512":
			return k.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// jwkJSON is a JWK's members that matter here.
type jwkJSON struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS reads a JWKS document. Keys for other uses than signing, of
// other types (symmetric "oct" keys among them) or malformed are left
// out; a set left with no key is an error.
func parseJWKS(doc []byte) ([]jwk, error) {
	var set struct {
		Keys []jwkJSON `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	var keys []jwk
	var errs []error
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		pub, err := k.publicKey()
		if err != nil {
			errs = append(errs, fmt.Errorf("key %d (kid %q): %w", i, k.Kid, err))
			continue
		}
		if pub != nil {
			keys = append(keys, jwk{kid: k.Kid, alg: k.Alg, key: pub})
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no usable signature key: %w", errors.Join(errs...))
	}
	return keys, nil
}

// publicKey decodes the key; nil, nil for a type not used here.
func (k jwkJSON) publicKey() (crypto.PublicKey, error) {
	b64 := base64.RawURLEncoding.Strict()
	switch k.Kty {
	case "RSA":
		n, err1 := b64.DecodeString(k.N)
		e, err2 := b64.DecodeString(k.E)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("RSA n or e: %w", err)
		}
		if len(e) == 0 || len(e) > 4 {
			return nil, errors.New("RSA exponent out of range")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < 2048 || pub.E < 3 || pub.E%2 == 0 {
			return nil, fmt.Errorf("RSA key of %d bits, exponent %d: want at least 2048 bits and an odd exponent", pub.N.BitLen(), pub.E)
		}
		return pub, nil
	case "EC":
		var curve elliptic.Curve
		switch k.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return nil, fmt.Errorf("EC curve %q not supported", k.Crv)
		}
		size := (curve.Params().BitSize + 7) / 8
		x, err1 := b64.DecodeString(k.X)
		y, err2 := b64.DecodeString(k.Y)
		if err := errors.Join(err1, err2); err != nil || len(x) != size || len(y) != size {
			return nil, fmt.Errorf("EC x or y: not %d base64url bytes", size)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("EC point: %w", err)
		}
		return pub, nil
	case "OKP":
		if k.Crv != "Ed25519" {
			return nil, nil
		}
		x, err := b64.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, errors.New("Ed25519 x: not 32 base64url bytes")
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, nil
}
