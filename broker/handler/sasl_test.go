package handler

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-broker/strata/broker/sasl"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/metadata"
)

type (
	saslHandshakeRow    = apiRow[*kmsg.SASLHandshakeResponse]
	saslAuthenticateRow = apiRow[*kmsg.SASLAuthenticateResponse]
)

// saslConn puts broker 1's requests on a SASL connection with PLAIN
// (alice, bob) and SCRAM-SHA-256 over the cache, sessions bounded by
// maxReauth.
func saslConn(maxReauth time.Duration) step {
	return func(t *testing.T, s *scene) {
		plain := sasl.NewPlain(map[string]string{"alice": "alice-secret", "bob": "bob-secret"})
		sc, err := sasl.NewScram(sasl.MechanismScramSHA256, cacheLookup(s.env.Cache, sasl.MechanismScramSHA256))
		if err != nil {
			t.Fatal(err)
		}
		s.conn = &Conn{Listener: "SASL", Principal: "User:ANONYMOUS", SASL: &Auth{
			Mechanisms: []sasl.Mechanism{plain, sc}, MaxReauth: maxReauth, FailDelay: 100 * time.Millisecond,
		}}
	}
}

func cacheLookup(c *metadata.Cache, mech string) sasl.ScramLookup {
	return func(_ context.Context, user string) (sasl.ScramCredential, bool, error) {
		cred, ok := c.ScramCredential(user, mech)
		return sasl.ScramCredential{Salt: cred.Salt, Iterations: int(cred.Iterations), StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}, ok, nil
	}
}

func handshake(mech string, v int16) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = v, mech
		return req
	}
}

// doHandshake sends SaslHandshake v1 for mech and wants it accepted.
func doHandshake(t *testing.T, s *scene, mech string) {
	t.Helper()
	resp := s.send(t, handshake(mech, 1)(t, s), 1).(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("handshake %s: %v", mech, kerr.ErrorForCode(resp.ErrorCode))
	}
}

func authenticate(msg string) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = []byte(msg)
		return req
	}
}

func TestSaslHandshake(t *testing.T) {
	runRows(t, tableOpts{}, []saslHandshakeRow{
		{name: "enabled mechanism", setup: saslConn(0), req: handshake("PLAIN", 1),
			want: func(t *testing.T, s *scene, resp *kmsg.SASLHandshakeResponse) {
				if resp.ErrorCode != 0 || len(resp.SupportedMechanisms) != 2 || resp.SupportedMechanisms[0] != "PLAIN" || resp.SupportedMechanisms[1] != "SCRAM-SHA-256" || s.closed.Load() {
					t.Errorf("%v %v closed %v", kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms, s.closed.Load())
				}
			}},
		{name: "mechanism not enabled closes", setup: saslConn(0), req: handshake("OAUTHBEARER", 1),
			want: func(t *testing.T, s *scene, resp *kmsg.SASLHandshakeResponse) {
				if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 2 || !s.closed.Load() {
					t.Errorf("%v %v closed %v", kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms, s.closed.Load())
				}
			}},
		{name: "not a SASL listener", req: handshake("PLAIN", 1),
			want: func(t *testing.T, s *scene, resp *kmsg.SASLHandshakeResponse) {
				if resp.ErrorCode != kerr.IllegalSaslState.Code {
					t.Errorf("%v", kerr.ErrorForCode(resp.ErrorCode))
				}
			}},
		{name: "re-authentication without SaslAuthenticate v1 is illegal", versions: []int16{1},
			setup: steps(saslConn(0), func(t *testing.T, s *scene) {
				doHandshake(t, s, "PLAIN")
				if r := s.send(t, authenticate("\x00alice\x00alice-secret")(t, s), 0).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
					t.Fatal(kerr.ErrorForCode(r.ErrorCode))
				}
			}), req: handshake("PLAIN", 1),
			want: func(t *testing.T, s *scene, resp *kmsg.SASLHandshakeResponse) {
				if resp.ErrorCode != kerr.IllegalSaslState.Code || s.closed.Load() {
					t.Errorf("%v closed %v", kerr.ErrorForCode(resp.ErrorCode), s.closed.Load())
				}
			}},
	})
}

func wantAuth(code int16, principal string, closed bool) check[*kmsg.SASLAuthenticateResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.SASLAuthenticateResponse) {
		t.Helper()
		if resp.ErrorCode != code || s.conn.Principal != principal || s.closed.Load() != closed {
			t.Errorf("%v (%v), principal %s, closed %v; want %v, %s, %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, s.conn.Principal, s.closed.Load(), kerr.ErrorForCode(code), principal, closed)
		}
	}
}

func TestSaslAuthenticate(t *testing.T) {
	plainOK := steps(saslConn(0), func(t *testing.T, s *scene) { doHandshake(t, s, "PLAIN") })
	runRows(t, tableOpts{}, []saslAuthenticateRow{
		{name: "PLAIN", setup: plainOK, req: authenticate("\x00alice\x00alice-secret"), want: wantAuth(0, "User:alice", false)},
		{name: "wrong password fails after the delay and closes", setup: plainOK, req: authenticate("\x00alice\x00nope"),
			want: func(t *testing.T, s *scene, resp *kmsg.SASLAuthenticateResponse) {
				wantAuth(kerr.SaslAuthenticationFailed.Code, "User:ANONYMOUS", true)(t, s, resp)
				if resp.ErrorMessage == nil || *resp.ErrorMessage == "" {
					t.Error("no error message")
				}
				if s.took < 100*time.Millisecond {
					t.Errorf("answered after %v, want connection.failed.authentication.delay.ms", s.took)
				}
			}},
		{name: "unknown user", setup: plainOK, req: authenticate("\x00mallory\x00x"), want: wantAuth(kerr.SaslAuthenticationFailed.Code, "User:ANONYMOUS", true)},
		{name: "without a handshake", setup: saslConn(0), req: authenticate("\x00alice\x00alice-secret"), want: wantAuth(kerr.IllegalSaslState.Code, "User:ANONYMOUS", true)},
		{name: "session lifetime is connections.max.reauth.ms", since: 1,
			setup: steps(saslConn(time.Minute), func(t *testing.T, s *scene) { doHandshake(t, s, "PLAIN") }),
			req:   authenticate("\x00alice\x00alice-secret"),
			want: func(t *testing.T, s *scene, resp *kmsg.SASLAuthenticateResponse) {
				wantAuth(0, "User:alice", false)(t, s, resp)
				if resp.SessionLifetimeMillis != 60000 {
					t.Errorf("session lifetime %d, want 60000", resp.SessionLifetimeMillis)
				}
			}},
		{name: "re-authentication keeps the principal", since: 1,
			setup: steps(plainOK, func(t *testing.T, s *scene) {
				if r := s.send(t, authenticate("\x00alice\x00alice-secret")(t, s), 1).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
					t.Fatal(kerr.ErrorForCode(r.ErrorCode))
				}
				doHandshake(t, s, "PLAIN")
			}),
			req: authenticate("\x00bob\x00bob-secret"), want: wantAuth(kerr.SaslAuthenticationFailed.Code, "User:alice", true)},
		{name: "re-authentication", since: 1,
			setup: steps(plainOK, func(t *testing.T, s *scene) {
				if r := s.send(t, authenticate("\x00alice\x00alice-secret")(t, s), 1).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
					t.Fatal(kerr.ErrorForCode(r.ErrorCode))
				}
				doHandshake(t, s, "PLAIN")
			}),
			req: authenticate("\x00alice\x00alice-secret"), want: wantAuth(0, "User:alice", false)},
	})
}

// TestAuthAllow: before authentication, and once the session expired,
// only ApiVersions, SaslHandshake and SaslAuthenticate pass.
func TestAuthAllow(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &Auth{Mechanisms: []sasl.Mechanism{sasl.NewPlain(map[string]string{"alice": "pw"})}, MaxReauth: time.Minute, Now: func() time.Time { return now }}
	for _, k := range []kmsg.Key{kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate} {
		if err := a.Allow(k.Int16()); err != nil {
			t.Errorf("%s before authentication: %v", k.Name(), err)
		}
	}
	if err := a.Allow(kmsg.Metadata.Int16()); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("Metadata before authentication: %v", err)
	}
	a.mech, a.session, a.stage = a.Mechanisms[0], a.Mechanisms[0].NewSession(), awaitAuthenticate
	for _, k := range []kmsg.Key{kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.Metadata} {
		if err := a.Allow(k.Int16()); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s between SaslHandshake and SaslAuthenticate: %v", k.Name(), err)
		}
	}
	if _, life, err := a.evaluate(t.Context(), []byte("\x00alice\x00pw")); err != nil || life != time.Minute {
		t.Fatalf("evaluate: %v %v", life, err)
	}
	if err := a.Allow(kmsg.Metadata.Int16()); err != nil {
		t.Errorf("Metadata after authentication: %v", err)
	}
	now = now.Add(time.Minute)
	if err := a.Allow(kmsg.Metadata.Int16()); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("Metadata after the session expired: %v", err)
	}
	if err := a.Allow(kmsg.SASLHandshake.Int16()); err != nil {
		t.Errorf("SaslHandshake after the session expired: %v", err)
	}
}

// upsert is an AlterUserScramCredentials upsertion of SCRAM-SHA-256.
func upsert(user, password string, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt = user, 1, iterations, []byte("0123456789abcdef")
	u.SaltedPassword, _ = pbkdf2.Key(sha256.New, password, u.Salt, int(max(iterations, 1)), sha256.Size)
	return u
}

func alterScramReq(dels []string, ups ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		for _, d := range dels {
			del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			del.Name, del.Mechanism = d, 1
			req.Deletions = append(req.Deletions, del)
		}
		req.Upsertions = ups
		return req
	}
}

func alterCodes(r kmsg.Response) []int16 {
	var out []int16
	for _, res := range r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
		out = append(out, res.ErrorCode)
	}
	return out
}

func withScramUser(user, password string) step {
	return func(t *testing.T, s *scene) {
		resp := s.do(t, alterScramReq(nil, upsert(user, password, 4096))(t, s)).(*kmsg.AlterUserSCRAMCredentialsResponse)
		if len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("alter: %+v", resp.Results)
		}
	}
}

func TestAlterUserScramCredentials(t *testing.T) {
	o := tableOpts{codes: alterCodes}
	runRows(t, o, []apiRow[*kmsg.AlterUserSCRAMCredentialsResponse]{
		{name: "upsert", req: alterScramReq(nil, upsert("alice", "pw", 4096)), codes: []int16{0},
			want: func(t *testing.T, s *scene, _ *kmsg.AlterUserSCRAMCredentialsResponse) {
				if c, ok := s.env.Cache.ScramCredential("alice", "SCRAM-SHA-256"); !ok || c.Iterations != 4096 || len(c.StoredKey) != 32 {
					t.Errorf("stored %+v %v", c, ok)
				}
			}},
		{name: "too few iterations", req: alterScramReq(nil, upsert("alice", "pw", 4095)), codes: []int16{kerr.UnacceptableCredential.Code}},
		{name: "too many iterations", req: alterScramReq(nil, upsert("alice", "pw", 16385)), codes: []int16{kerr.UnacceptableCredential.Code}},
		{name: "empty user", req: alterScramReq(nil, upsert("", "pw", 4096)), codes: []int16{kerr.UnacceptableCredential.Code}},
		{name: "delete unknown", req: alterScramReq([]string{"nobody"}), codes: []int16{kerr.ResourceNotFound.Code}},
		{name: "delete", setup: withScramUser("alice", "pw"), req: alterScramReq([]string{"alice"}), codes: []int16{0},
			want: func(t *testing.T, s *scene, _ *kmsg.AlterUserSCRAMCredentialsResponse) {
				if _, ok := s.env.Cache.ScramCredential("alice", "SCRAM-SHA-256"); ok {
					t.Error("still stored")
				}
			}},
		{name: "duplicate user", req: alterScramReq([]string{"alice"}, upsert("alice", "pw", 4096), upsert("bob", "pw", 4096)),
			codes: []int16{kerr.DuplicateResource.Code, 0}},
	})
}

func describeScramReq(users ...string) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, u := range users {
			ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			ru.Name = u
			req.Users = append(req.Users, ru)
		}
		return req
	}
}

func TestDescribeUserScramCredentials(t *testing.T) {
	codes := func(r kmsg.Response) []int16 {
		var out []int16
		for _, res := range r.(*kmsg.DescribeUserSCRAMCredentialsResponse).Results {
			out = append(out, res.ErrorCode)
		}
		return out
	}
	runRows(t, tableOpts{codes: codes}, []apiRow[*kmsg.DescribeUserSCRAMCredentialsResponse]{
		{name: "all users", setup: steps(withScramUser("bob", "b"), withScramUser("alice", "a")), req: describeScramReq(), codes: []int16{0, 0},
			want: func(t *testing.T, s *scene, resp *kmsg.DescribeUserSCRAMCredentialsResponse) {
				if resp.Results[0].User != "alice" || len(resp.Results[0].CredentialInfos) != 1 ||
					resp.Results[0].CredentialInfos[0].Mechanism != 1 || resp.Results[0].CredentialInfos[0].Iterations != 4096 {
					t.Errorf("%+v", resp.Results)
				}
			}},
		{name: "unknown user", setup: withScramUser("alice", "a"), req: describeScramReq("alice", "nobody"), codes: []int16{0, kerr.ResourceNotFound.Code}},
		{name: "user twice", setup: withScramUser("alice", "a"), req: describeScramReq("alice", "alice"), codes: []int16{kerr.DuplicateResource.Code}},
	})
}

// TestScramAuthenticateFromStore: a credential set with
// AlterUserScramCredentials authenticates franz-go's SCRAM client, and a
// wrong password fails.
func TestScramAuthenticateFromStore(t *testing.T) {
	for _, tc := range []struct {
		password string
		code     int16
	}{{"secret", 0}, {"wrong", kerr.SaslAuthenticationFailed.Code}} {
		t.Run(tc.password, func(t *testing.T) {
			s := newScene(t, sceneOpts{}, 1)
			withScramUser("alice", "secret")(t, s)
			saslConn(0)(t, s)
			doHandshake(t, s, "SCRAM-SHA-256")
			sess, msg, err := scram.Auth{User: "alice", Pass: tc.password}.AsSha256Mechanism().Authenticate(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				resp := s.send(t, authenticate(string(msg))(t, s), 1).(*kmsg.SASLAuthenticateResponse)
				if resp.ErrorCode != 0 {
					if resp.ErrorCode != tc.code {
						t.Fatalf("step %d: %v", i, kerr.ErrorForCode(resp.ErrorCode))
					}
					return
				}
				done, next, err := sess.Challenge(resp.SASLAuthBytes)
				if err != nil {
					t.Fatal(err)
				}
				if done {
					break
				}
				msg = next
			}
			if tc.code != 0 || s.conn.Principal != "User:alice" {
				t.Errorf("authenticated as %s", s.conn.Principal)
			}
		})
	}
}

// TestAuthRefusal: between SaslHandshake and SaslAuthenticate every API of
// the table whose response carries a top-level error code is answered with
// ILLEGAL_SASL_STATE, at each version that carries it; the others, and any request
// in another stage, get no answer.
func TestAuthRefusal(t *testing.T) {
	a := &Auth{Mechanisms: []sasl.Mechanism{sasl.NewPlain(map[string]string{"alice": "pw"})}}
	if r := a.Refusal(kmsg.Metadata.Int16(), 12); r != nil {
		t.Errorf("before SaslHandshake: %T", r)
	}
	a.mech, a.session, a.stage = a.Mechanisms[0], a.Mechanisms[0].NewSession(), awaitAuthenticate
	answered := map[int16]bool{}
	for _, key := range Keys() {
		api, _ := Lookup(key)
		for v := api.Min; v <= api.Max; v++ {
			r := a.Refusal(key, v)
			if key == kmsg.SASLAuthenticate.Int16() || r == nil {
				if key == kmsg.SASLAuthenticate.Int16() && r != nil {
					t.Errorf("SaslAuthenticate v%d refused", v)
				}
				continue
			}
			answered[key] = true
			if r.Key() != key || r.GetVersion() != v {
				t.Errorf("%s v%d: answered %s v%d", kmsg.NameForKey(key), v, kmsg.NameForKey(r.Key()), r.GetVersion())
			}
			f, err := wire.EncodeResponse(7, r, nil, nil)
			if err != nil {
				t.Errorf("%s v%d: encode: %v", kmsg.NameForKey(key), v, err)
				continue
			}
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			got, err := decodeFrame(req, f)
			if err != nil {
				t.Fatalf("%s v%d: decode: %v", kmsg.NameForKey(key), v, err)
			}
			if ec := reflect.ValueOf(got).Elem().FieldByName("ErrorCode"); ec.Int() != int64(kerr.IllegalSaslState.Code) {
				t.Errorf("%s v%d: error code %d", kmsg.NameForKey(key), v, ec.Int())
			}
		}
	}
	for _, k := range []kmsg.Key{kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.InitProducerID} {
		if !answered[k.Int16()] {
			t.Errorf("%s not answered", k.Name())
		}
	}
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.ListOffsets, kmsg.CreateTopics} {
		if answered[k.Int16()] {
			t.Errorf("%s answered: its response has no top-level error code", k.Name())
		}
	}
	if r := a.Refusal(kmsg.ApiVersions.Int16(), 3).(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("ApiVersions: %d", r.ErrorCode)
	}
	if a.Refusal(kmsg.Fetch.Int16(), 12) == nil {
		t.Errorf("Fetch v12 not answered")
	}
	if r := a.Refusal(kmsg.Fetch.Int16(), 6); r != nil {
		t.Errorf("Fetch v6 answered: its response has no top-level error code")
	}
	if r := a.Refusal(kmsg.Produce.Int16(), 99); r != nil {
		t.Errorf("a version not served answered")
	}
}
