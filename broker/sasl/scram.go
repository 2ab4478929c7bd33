package sasl

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// SCRAM iteration bounds: Kafka's minimum for SCRAM-SHA-256/512 and the
// maximum AlterUserScramCredentials accepts.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// scramSaltLen is the length of the salts NewScramCredential draws.
const scramSaltLen = 32

// ScramCredential is what the server keeps of a SCRAM user (RFC 5802 §3):
// never the password, only the salt and iteration count the client needs
// to derive its keys, StoredKey to check the client's proof and ServerKey
// to prove the server to the client.
type ScramCredential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// ScramLookup finds a user's credential for one SCRAM mechanism. ok is
// false for an unknown user; err is for a failed lookup (the store being
// unreachable), which fails the exchange. It is called concurrently by
// many connections' sessions.
type ScramLookup func(ctx context.Context, user string) (cred ScramCredential, ok bool, err error)

// scramHash returns the hash of a SCRAM mechanism name.
func scramHash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case MechanismScramSHA256:
		return sha256.New, nil
	case MechanismScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
}

// NewScramCredential derives a credential for password with a fresh
// random salt, for mechanism SCRAM-SHA-256 or SCRAM-SHA-512.
func NewScramCredential(mechanism, password string, iterations int) (ScramCredential, error) {
	salt := make([]byte, scramSaltLen)
	rand.Read(salt)
	return ScramCredentialWithSalt(mechanism, password, salt, iterations)
}

// ScramCredentialWithSalt derives a credential for password with salt.
func ScramCredentialWithSalt(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if err := checkIterations(iterations); err != nil {
		return ScramCredential{}, err
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return ScramCredential{}, fmt.Errorf("scram: salting password: %w", err)
	}
	return ScramCredentialFromSaltedPassword(mechanism, salt, salted, iterations)
}

// ScramCredentialFromSaltedPassword builds a credential from a salted
// password, Hi(password, salt, i), the form AlterUserScramCredentials
// carries so that the password never leaves the client.
func ScramCredentialFromSaltedPassword(mechanism string, salt, saltedPassword []byte, iterations int) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if err := checkIterations(iterations); err != nil {
		return ScramCredential{}, err
	}
	if len(salt) == 0 {
		return ScramCredential{}, errors.New("scram: empty salt")
	}
	if len(saltedPassword) != h().Size() {
		return ScramCredential{}, fmt.Errorf("scram: salted password is %d bytes, want %d for %s", len(saltedPassword), h().Size(), mechanism)
	}
	clientKey := hmacSum(h, saltedPassword, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  stored.Sum(nil),
		ServerKey:  hmacSum(h, saltedPassword, []byte("Server Key")),
	}, nil
}

func checkIterations(i int) error {
	if i < ScramMinIterations || i > ScramMaxIterations {
		return fmt.Errorf("scram: %d iterations, want %d to %d", i, ScramMinIterations, ScramMaxIterations)
	}
	return nil
}

// validFor checks a stored credential before it is used.
func (c ScramCredential) validFor(h func() hash.Hash) error {
	if err := checkIterations(c.Iterations); err != nil {
		return err
	}
	n := h().Size()
	if len(c.Salt) == 0 || len(c.StoredKey) != n || len(c.ServerKey) != n {
		return fmt.Errorf("scram: stored credential malformed (salt %d, keys %d/%d bytes, want %d)", len(c.Salt), len(c.StoredKey), len(c.ServerKey), n)
	}
	return nil
}

func hmacSum(h func() hash.Hash, key []byte, msgs ...[]byte) []byte {
	m := hmac.New(h, key)
	for _, b := range msgs {
		m.Write(b)
	}
	return m.Sum(nil)
}

// Scram is the server side of SCRAM-SHA-256 or SCRAM-SHA-512 (RFC 5802,
// RFC 7677). Credentials come from a ScramLookup.
//
// An unknown user gets a server-first message as a known one would, with
// a salt derived from the user name under a per-instance secret (stable
// across attempts, so it cannot be told from a real one) and keys no
// password matches, and the iteration count of the last real credential
// served; the exchange then fails at the proof check, with the
// same message and after the same work as a wrong password. (Kafka fails
// the first message for an unknown user; RFC 5802 §9 recommends this.)
type Scram struct {
	name   string
	hash   func() hash.Hash
	lookup ScramLookup
	// fakeSecret derives unknown users' salts and keys.
	fakeSecret []byte
	// fakeIterations is the iteration count of the last real credential
	// served, given to unknown users so theirs does not stand out.
	fakeIterations atomic.Int64
	// serverNonce draws the server's part of the nonce; tests replace it
	// to replay RFC 7677's example.
	serverNonce func() string
}

// NewScram serves mechanism (SCRAM-SHA-256 or SCRAM-SHA-512) with
// credentials from lookup.
func NewScram(mechanism string, lookup ScramLookup) (*Scram, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return nil, err
	}
	if lookup == nil {
		return nil, errors.New("scram: nil credential lookup")
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	m := &Scram{name: mechanism, hash: h, lookup: lookup, fakeSecret: secret}
	m.fakeIterations.Store(ScramMinIterations)
	m.serverNonce = randomNonce
	return m, nil
}

// Name is the mechanism name.
func (s *Scram) Name() string { return s.name }

// NewSession starts one connection's SCRAM exchange.
func (s *Scram) NewSession() Session { return &scramSession{mech: s} }

// fakeCredential is an unknown user's credential: salt and keys derived
// from the name, no password behind them.
func (s *Scram) fakeCredential(user string) ScramCredential {
	salt := hmacSum(s.hash, s.fakeSecret, []byte("salt\x00"+user))
	if len(salt) > scramSaltLen {
		salt = salt[:scramSaltLen]
	}
	return ScramCredential{
		Salt:       salt,
		Iterations: int(s.fakeIterations.Load()),
		StoredKey:  hmacSum(s.hash, s.fakeSecret, []byte("stored\x00"+user)),
		ServerKey:  hmacSum(s.hash, s.fakeSecret, []byte("server\x00"+user)),
	}
}

type scramState int

const (
	scramWantFirst scramState = iota
	scramWantFinal
	scramDone
	scramFailed
)

type scramSession struct {
	mech        *Scram
	state       scramState
	first       scramClientFirst
	serverFirst string
	nonce       string
	cred        ScramCredential
}

func (s *scramSession) Evaluate(ctx context.Context, msg []byte) ([]byte, error) {
	var out []byte
	var err error
	switch s.state {
	case scramWantFirst:
		out, err = s.clientFirst(ctx, msg)
	case scramWantFinal:
		out, err = s.clientFinal(msg)
	default:
		err = s.fail(invalidCredentials(s.mech.name), errExchangeOver)
	}
	if err != nil {
		s.state, s.cred = scramFailed, ScramCredential{}
		return nil, err
	}
	return out, nil
}

func (s *scramSession) fail(msg string, err error) error {
	return &AuthError{Mechanism: s.mech.name, User: s.first.user, Message: msg, Err: err}
}

func (s *scramSession) clientFirst(ctx context.Context, msg []byte) ([]byte, error) {
	generic := invalidCredentials(s.mech.name)
	first, err := parseScramClientFirst(string(msg))
	if err != nil {
		return nil, s.fail(generic, err)
	}
	s.first = first
	if first.tokenAuth {
		return nil, s.fail(generic, errors.New("delegation tokens (tokenauth) are not supported"))
	}
	if first.authzid != "" && first.authzid != first.user {
		return nil, s.fail("Authentication failed: Client requested an authorization id that is different from username", nil)
	}
	cred, ok, err := s.mech.lookup(ctx, first.user)
	if err != nil {
		return nil, s.fail(generic, fmt.Errorf("credential lookup: %w", err))
	}
	if ok {
		if err := cred.validFor(s.mech.hash); err != nil {
			return nil, s.fail(generic, err)
		}
		s.mech.fakeIterations.Store(int64(cred.Iterations))
	} else {
		cred = s.mech.fakeCredential(first.user)
	}
	s.cred = cred
	s.nonce = first.nonce + s.mech.serverNonce()
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	s.state = scramWantFinal
	return []byte(s.serverFirst), nil
}

func (s *scramSession) clientFinal(msg []byte) ([]byte, error) {
	generic := invalidCredentials(s.mech.name)
	final, err := parseScramClientFinal(string(msg))
	if err != nil {
		return nil, s.fail(generic, err)
	}
	// Kafka's ScramSaslServer accepts a final nonce that ends with the
	// server-first one: librdkafka sends its client nonce again before it.
	if !strings.HasSuffix(final.nonce, s.nonce) {
		return nil, s.fail(generic, errors.New("invalid client nonce in the final client message"))
	}
	if string(final.channelBinding) != s.first.gs2Header {
		return nil, s.fail(generic, errors.New("channel binding c= does not match the gs2 header"))
	}
	n := s.mech.hash().Size()
	if len(final.proof) != n {
		return nil, s.fail(generic, fmt.Errorf("client proof is %d bytes, want %d", len(final.proof), n))
	}
	authMsg := []byte(s.first.bare + "," + s.serverFirst + "," + final.withoutProof)
	// ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage); the client
	// knows the password if H(ClientKey) is StoredKey.
	clientKey := hmacSum(s.mech.hash, s.cred.StoredKey, authMsg)
	subtle.XORBytes(clientKey, clientKey, final.proof)
	h := s.mech.hash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, s.fail(generic, errors.New("invalid client proof"))
	}
	serverSig := hmacSum(s.mech.hash, s.cred.ServerKey, authMsg)
	s.state, s.cred = scramDone, ScramCredential{}
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), nil
}

func (s *scramSession) Done() bool { return s.state == scramDone }

func (s *scramSession) Principal() Principal { return UserPrincipal(s.first.user) }

func (s *scramSession) Expiry() time.Time { return time.Time{} }

// randomNonce is 24 random bytes in base64url, 192 bits.
func randomNonce() string {
	var r [24]byte
	rand.Read(r[:])
	return base64.RawURLEncoding.EncodeToString(r[:])
}
