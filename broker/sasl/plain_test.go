package sasl

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/plain"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

func newTestPlain(t *testing.T) *Plain {
	t.Helper()
	p, err := NewPlainFromJAAS(plainJAAS)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlainFranzGo(t *testing.T) {
	p := newTestPlain(t)
	for _, zid := range []string{"", "alice"} {
		s := p.NewSession()
		if err := exchange(t, plain.Auth{Zid: zid, User: "alice", Pass: "alice-secret"}.AsMechanism(), s); err != nil {
			t.Fatalf("zid %q: %v", zid, err)
		}
		if got := s.Principal().String(); got != "User:alice" {
			t.Fatalf("principal %s", got)
		}
		if !s.Expiry().IsZero() {
			t.Fatal("PLAIN session has an expiry")
		}
	}
}

func TestPlainRefused(t *testing.T) {
	p := newTestPlain(t)
	const invalid = "Authentication failed: Invalid username or password"
	for _, tc := range []struct {
		name string
		auth plain.Auth
		want string
	}{
		{"wrong password", plain.Auth{User: "alice", Pass: "admin-secret"}, invalid},
		{"unknown user", plain.Auth{User: "mallory", Pass: "alice-secret"}, invalid},
		{"password prefix", plain.Auth{User: "alice", Pass: "alice-secre"}, invalid},
		{"other authzid", plain.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}, "authorization id that is different from username"},
	} {
		s := p.NewSession()
		err := exchange(t, tc.auth.AsMechanism(), s)
		if err == nil || !strings.Contains(clientMessage(t, err), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestPlainMalformed(t *testing.T) {
	p := newTestPlain(t)
	for _, msg := range []string{"", "alice", "\x00alice", "a\x00b\x00c\x00d", "\x00\x00x", "\x00alice\x00", "\x00alice\x00\xff"} {
		s := p.NewSession()
		_, err := s.Evaluate(context.Background(), []byte(msg))
		if !errors.Is(err, ErrAuthenticationFailed) || s.Done() {
			t.Errorf("Evaluate(%q) = %v, done %v", msg, err, s.Done())
		}
	}
	s := p.NewSession()
	if _, err := s.Evaluate(context.Background(), []byte("\x00alice\x00alice-secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Evaluate(context.Background(), []byte("\x00alice\x00alice-secret")); err == nil {
		t.Fatal("a second message after completion was accepted")
	}
}

func TestPlainUsersFromOtherModule(t *testing.T) {
	_, err := NewPlainFromJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required user_alice="x";`)
	if err == nil || !strings.Contains(err.Error(), "PlainLoginModule") {
		t.Fatalf("got %v", err)
	}
}
