package sasl

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

var scramMechanisms = []string{MechanismScramSHA256, MechanismScramSHA512}

// scramStore is a map-backed ScramLookup that counts lookups.
type scramStore struct {
	creds   map[string]ScramCredential
	lookups atomic.Int64
	err     error
}

func (st *scramStore) lookup(_ context.Context, user string) (ScramCredential, bool, error) {
	st.lookups.Add(1)
	if st.err != nil {
		return ScramCredential{}, false, st.err
	}
	c, ok := st.creds[user]
	return c, ok, nil
}

func newTestScram(t *testing.T, mech string, users map[string]string) (*Scram, *scramStore) {
	t.Helper()
	st := &scramStore{creds: map[string]ScramCredential{}}
	for u, p := range users {
		c, err := NewScramCredential(mech, p, 4096)
		if err != nil {
			t.Fatal(err)
		}
		st.creds[u] = c
	}
	s, err := NewScram(mech, st.lookup)
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

func scramClient(mech string, a scram.Auth) kgosasl.Mechanism {
	if mech == MechanismScramSHA256 {
		return a.AsSha256Mechanism()
	}
	return a.AsSha512Mechanism()
}

func TestScramFranzGo(t *testing.T) {
	for _, mech := range scramMechanisms {
		t.Run(mech, func(t *testing.T) {
			s, _ := newTestScram(t, mech, map[string]string{"alice": "alice-secret", "we,ird=name": "pw"})
			for _, a := range []scram.Auth{
				{User: "alice", Pass: "alice-secret"},
				{Zid: "alice", User: "alice", Pass: "alice-secret"},
				{User: "we,ird=name", Pass: "pw"},
			} {
				sess := s.NewSession()
				if err := exchange(t, scramClient(mech, a), sess); err != nil {
					t.Fatalf("%+v: %v", a, err)
				}
				if got, want := sess.Principal(), UserPrincipal(a.User); got != want || !sess.Expiry().IsZero() {
					t.Fatalf("principal %v expiry %v", got, sess.Expiry())
				}
			}
		})
	}
}

// TestScramWrongPasswordAndUnknownUserAlike checks that an unknown user
// gets a server-first message, fails at the proof like a wrong password,
// with the same client message, and sees a stable salt across attempts.
func TestScramWrongPasswordAndUnknownUserAlike(t *testing.T) {
	for _, mech := range scramMechanisms {
		t.Run(mech, func(t *testing.T) {
			s, _ := newTestScram(t, mech, map[string]string{"alice": "alice-secret"})
			wrong := exchange(t, scramClient(mech, scram.Auth{User: "alice", Pass: "nope"}), s.NewSession())
			unknown := exchange(t, scramClient(mech, scram.Auth{User: "mallory", Pass: "nope"}), s.NewSession())
			for _, err := range []error{wrong, unknown} {
				if err == nil || errors.Is(err, errClient) {
					t.Fatalf("want a server refusal, got %v", err)
				}
				if !strings.Contains(err.Error(), "invalid client proof") {
					t.Fatalf("not refused at the proof: %v", err)
				}
			}
			if a, b := clientMessage(t, wrong), clientMessage(t, unknown); a != b || a != invalidCredentials(mech) {
				t.Fatalf("client messages differ: %q vs %q", a, b)
			}
			salt := func(user string) string {
				sess := s.NewSession()
				out, err := sess.Evaluate(context.Background(), []byte("n,,n="+user+",r=abc"))
				if err != nil {
					t.Fatal(err)
				}
				fields := strings.Split(string(out), ",")
				if len(fields) != 3 || fields[2] != "i=4096" {
					t.Fatalf("server-first %q", out)
				}
				return fields[1]
			}
			if a, b := salt("mallory"), salt("mallory"); a != b {
				t.Fatalf("unknown user's salt changed: %s, %s", a, b)
			}
			if salt("mallory") == salt("eve") {
				t.Fatal("two unknown users share a salt")
			}
		})
	}
}

// scramFirst runs the client-first step and returns the session and the
// server-first message.
func scramFirst(t *testing.T, s *Scram, clientFirst string) (Session, string) {
	t.Helper()
	sess := s.NewSession()
	out, err := sess.Evaluate(context.Background(), []byte(clientFirst))
	if err != nil {
		t.Fatalf("client-first %q: %v", clientFirst, err)
	}
	return sess, string(out)
}

// TestScramRFC7677Example replays RFC 7677's SCRAM-SHA-256 exchange.
func TestScramRFC7677Example(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := ScramCredentialWithSalt(MechanismScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScram(MechanismScramSHA256, func(_ context.Context, u string) (ScramCredential, bool, error) {
		return cred, u == "user", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.serverNonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	sess, first := scramFirst(t, s, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; first != want {
		t.Fatalf("server-first %q, want %q", first, want)
	}
	final, err := sess.Evaluate(context.Background(), []byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(final) != want || !sess.Done() {
		t.Fatalf("server-final %q, want %q", final, want)
	}
	if _, err := sess.Evaluate(context.Background(), []byte("more")); err == nil {
		t.Fatal("message after completion accepted")
	}
}

// saltedPassword is Hi(password, salt, i), what a client derives.
func saltedPassword(t *testing.T, mech, password string, salt []byte, iters int) []byte {
	t.Helper()
	h, _ := scramHash(mech)
	k, err := pbkdf2.Key(h, password, salt, iters, h().Size())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// scramFinal computes, as a client would, the client-final message's
// part without the proof and the proof for password.
func scramFinal(t *testing.T, mech, password, gs2, bare, serverFirst string) (withoutProof string, proof []byte) {
	t.Helper()
	h, _ := scramHash(mech)
	fields := strings.Split(serverFirst, ",")
	salt, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(fields[1], "s="))
	iters, _ := strconv.Atoi(strings.TrimPrefix(fields[2], "i="))
	clientKey := hmacSum(h, saltedPassword(t, mech, password, salt, iters), []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	withoutProof = "c=" + base64.StdEncoding.EncodeToString([]byte(gs2)) + "," + fields[0]
	proof = hmacSum(h, stored.Sum(nil), []byte(bare+","+serverFirst+","+withoutProof))
	subtle.XORBytes(proof, proof, clientKey)
	return withoutProof, proof
}

func TestScramRefusals(t *testing.T) {
	ctx := context.Background()
	for _, mech := range scramMechanisms {
		t.Run(mech, func(t *testing.T) {
			s, st := newTestScram(t, mech, map[string]string{"alice": "alice-secret"})
			const bare = "n=alice,r=cnonce"
			final := func(gs2, nonceOverride string, tamper bool) error {
				sess, first := scramFirst(t, s, gs2+bare)
				wp, proof := scramFinal(t, mech, "alice-secret", gs2, bare, first)
				if nonceOverride != "" {
					wp = wp[:strings.Index(wp, ",r=")] + ",r=" + nonceOverride
				}
				if tamper {
					proof[0] ^= 1
				}
				_, err := sess.Evaluate(ctx, []byte(wp+",p="+base64.StdEncoding.EncodeToString(proof)))
				return err
			}
			if err := final("n,,", "", false); err != nil {
				t.Fatalf("hand-built exchange: %v", err)
			}
			if err := final("n,a=alice,", "", false); err != nil {
				t.Fatalf("hand-built exchange with authzid: %v", err)
			}
			for name, err := range map[string]error{
				"bad nonce":    final("n,,", "cnonceFORGED", false),
				"client nonce": final("n,,", "cnonce", false),
				"bad proof":    final("n,,", "", true),
			} {
				if !errors.Is(err, ErrAuthenticationFailed) || clientMessage(t, err) != invalidCredentials(mech) {
					t.Errorf("%s: %v", name, err)
				}
			}

			// c= must echo the gs2 header of the client-first message.
			sess, first := scramFirst(t, s, "n,a=alice,"+bare)
			wp, proof := scramFinal(t, mech, "alice-secret", "n,,", bare, first)
			if _, err := sess.Evaluate(ctx, []byte(wp+",p="+base64.StdEncoding.EncodeToString(proof))); err == nil || !strings.Contains(err.Error(), "channel binding") {
				t.Errorf("mismatched c=: %v", err)
			}

			before := st.lookups.Load()
			for _, tc := range []struct{ msg, want string }{
				{"p=tls-unique,,n=alice,r=x", "channel binding is not supported"},
				{"y,,n=alice,r=x", "gs2 flag y"},
				{"n,,n=alice,r=x,tokenauth=true", "delegation tokens"},
				{"n,,m=ext,n=alice,r=x", "mandatory extension"},
				{"n,,n=alice", "want n= and r="},
				{"n,,n=al=ice,r=x", "invalid '=' escape"},
				{"n,,n=alice,r=", "empty nonce"},
				{"n,a=bob,n=alice,r=x", "authorization id that is different from username"},
			} {
				_, err := s.NewSession().Evaluate(ctx, []byte(tc.msg))
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("client-first %q: %v, want %q", tc.msg, err, tc.want)
				}
			}
			if n := st.lookups.Load() - before; n != 0 {
				t.Errorf("refused client-first messages made %d credential lookups", n)
			}
		})
	}
}

func TestScramLookupFailure(t *testing.T) {
	s, st := newTestScram(t, MechanismScramSHA256, nil)
	st.err = errors.New("etcd unreachable")
	_, err := s.NewSession().Evaluate(context.Background(), []byte("n,,n=alice,r=x"))
	if !errors.Is(err, st.err) || clientMessage(t, err) != invalidCredentials(MechanismScramSHA256) {
		t.Fatalf("got %v", err)
	}
}

func TestScramStoredCredentialChecked(t *testing.T) {
	s, err := NewScram(MechanismScramSHA512, func(context.Context, string) (ScramCredential, bool, error) {
		return ScramCredential{Salt: []byte("s"), Iterations: 4096, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32)}, true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewSession().Evaluate(context.Background(), []byte("n,,n=alice,r=x")); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("SHA-256-sized keys served for SCRAM-SHA-512: %v", err)
	}
}

func TestScramCredentialConstructors(t *testing.T) {
	for _, mech := range scramMechanisms {
		for _, it := range []int{4095, 16385, 0} {
			if _, err := NewScramCredential(mech, "pw", it); err == nil {
				t.Errorf("%s: %d iterations accepted", mech, it)
			}
		}
		salt := []byte("0123456789abcdef")
		a, err := ScramCredentialWithSalt(mech, "pw", salt, 16384)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := scramHash(mech)
		salted := saltedPassword(t, mech, "pw", salt, 16384)
		b, err := ScramCredentialFromSaltedPassword(mech, salt, salted, 16384)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.StoredKey, b.StoredKey) || !bytes.Equal(a.ServerKey, b.ServerKey) || len(a.StoredKey) != h().Size() {
			t.Errorf("%s: credentials from password and from salted password differ", mech)
		}
		if _, err := ScramCredentialFromSaltedPassword(mech, salt, salted[1:], 4096); err == nil {
			t.Errorf("%s: short salted password accepted", mech)
		}
		if _, err := ScramCredentialFromSaltedPassword(mech, nil, salted, 4096); err == nil {
			t.Errorf("%s: empty salt accepted", mech)
		}
	}
	if _, err := NewScramCredential("SCRAM-SHA-1", "pw", 4096); err == nil {
		t.Error("SCRAM-SHA-1 accepted")
	}
	if _, err := NewScram(MechanismScramSHA256, nil); err == nil {
		t.Error("nil lookup accepted")
	}
}

// TestScramConcurrentSessions runs exchanges of several users at once on
// one mechanism, for the race detector.
func TestScramConcurrentSessions(t *testing.T) {
	s, _ := newTestScram(t, MechanismScramSHA512, map[string]string{"alice": "a", "bob": "b"})
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			user, pass := "alice", "a"
			switch i % 3 {
			case 1:
				user, pass = "bob", "b"
			case 2:
				user = "mallory"
			}
			err := exchange(t, scramClient(MechanismScramSHA512, scram.Auth{User: user, Pass: pass}), s.NewSession())
			if (err == nil) != (user != "mallory") {
				t.Errorf("%s: %v", user, err)
			}
		})
	}
}

// TestScramNonceEchoedAfterClientNonce: librdkafka's final message puts
// its client nonce again before the combined nonce; Kafka accepts a final
// nonce that ends with the server-first one, and so does Strata.
func TestScramNonceEchoedAfterClientNonce(t *testing.T) {
	for _, mech := range scramMechanisms {
		s, _ := newTestScram(t, mech, map[string]string{"alice": "alice-secret"})
		const bare = "n=alice,r=cnonce"
		sess, first := scramFirst(t, s, "n,,"+bare)
		h, _ := scramHash(mech)
		fields := strings.Split(first, ",")
		salt, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(fields[1], "s="))
		iters, _ := strconv.Atoi(strings.TrimPrefix(fields[2], "i="))
		clientKey := hmacSum(h, saltedPassword(t, mech, "alice-secret", salt, iters), []byte("Client Key"))
		stored := h()
		stored.Write(clientKey)
		wp := "c=" + base64.StdEncoding.EncodeToString([]byte("n,,")) + ",r=cnonce" + strings.TrimPrefix(fields[0], "r=")
		proof := hmacSum(h, stored.Sum(nil), []byte(bare+","+first+","+wp))
		subtle.XORBytes(proof, proof, clientKey)
		if _, err := sess.Evaluate(context.Background(), []byte(wp+",p="+base64.StdEncoding.EncodeToString(proof))); err != nil || !sess.Done() {
			t.Errorf("%s: %v", mech, err)
		}
	}
}
