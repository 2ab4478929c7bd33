package sasl

import (
	"bytes"
	"context"
	"encoding/base64"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The seed corpora are in testdata/fuzz/<target>; the f.Add seeds below
// cover the same ground so that plain `go test` runs them too.

// FuzzScramMessages parses arbitrary client-first and client-final
// messages, checks that what parses re-encodes to the same fields, and
// drives a server session with both.
func FuzzScramMessages(f *testing.F) {
	f.Add("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	f.Add("n,a=al=2Cice,n=al=2Cice,r=x,ext=1", "c=bixhPWFsPTJDaWNlLA==,r=x,ext=1,p=AA==")
	f.Add("p=tls-unique,,n=u,r=n", "c=,r=,p=")
	f.Add("n,,n=user,r=abc,tokenauth=true", "")
	cred, err := ScramCredentialWithSalt(MechanismScramSHA256, "pencil", []byte("salt"), 4096)
	if err != nil {
		f.Fatal(err)
	}
	s, err := NewScram(MechanismScramSHA256, func(_ context.Context, user string) (ScramCredential, bool, error) {
		return cred, user == "user", nil
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, first, final string) {
		if m, err := parseScramClientFirst(first); err == nil {
			if m.gs2Header+m.bare != first {
				t.Fatalf("gs2 header %q + bare %q != %q", m.gs2Header, m.bare, first)
			}
			gs2 := "n,,"
			if m.authzid != "" {
				gs2 = "n,a=" + scramEscape(m.authzid) + ","
			}
			again, err := parseScramClientFirst(gs2 + "n=" + scramEscape(m.user) + ",r=" + m.nonce)
			if err != nil || again.user != m.user || again.authzid != m.authzid || again.nonce != m.nonce {
				t.Fatalf("re-encoded %+v parses as %+v, %v", m, again, err)
			}
		}
		if m, err := parseScramClientFinal(final); err == nil {
			if m.withoutProof+",p="+base64.StdEncoding.EncodeToString(m.proof) != final {
				t.Fatalf("client-final %q does not re-encode", final)
			}
			if strings.Contains(m.nonce, ",") {
				t.Fatalf("nonce %q has a comma", m.nonce)
			}
		}
		sess := s.NewSession()
		if _, err := sess.Evaluate(context.Background(), []byte(first)); err == nil {
			if _, err := sess.Evaluate(context.Background(), []byte(final)); err == nil {
				// Only a proof for "pencil" over this exchange's random
				// nonce passes; the fuzzer cannot know that nonce.
				t.Fatalf("fuzzed exchange %q / %q authenticated", first, final)
			}
		}
		if sess.Done() {
			t.Fatal("failed session reports Done")
		}
	})
}

// scramEscape encodes a user name as a saslname.
func scramEscape(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

// FuzzPlainMessage parses arbitrary PLAIN messages and checks them
// against a server session.
func FuzzPlainMessage(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("alice\x00alice\x00alice-secret"))
	f.Add([]byte("\x00\x00"))
	f.Add([]byte("a\x00b\x00c\x00d"))
	f.Add([]byte("\x00alice\x00\xff\xfe"))
	p := NewPlain(map[string]string{"alice": "alice-secret"})
	f.Fuzz(func(t *testing.T, msg []byte) {
		authzid, user, pass, err := parsePlain(msg)
		if err == nil {
			if got := authzid + "\x00" + user + "\x00" + pass; got != string(msg) {
				t.Fatalf("%q parsed as %q", msg, got)
			}
		}
		s := p.NewSession()
		_, err = s.Evaluate(context.Background(), msg)
		ok := bytes.Equal(msg, []byte("\x00alice\x00alice-secret")) || bytes.Equal(msg, []byte("alice\x00alice\x00alice-secret"))
		if (err == nil) != ok || s.Done() != ok {
			t.Fatalf("%q: err %v, done %v", msg, err, s.Done())
		}
	})
}

// FuzzJAAS parses arbitrary JAAS configurations and checks that what
// parses formats back to the same entries.
func FuzzJAAS(f *testing.F) {
	f.Add(plainJAAS)
	f.Add(`a.B Optional k='v\'q' /* c */ k2="\101\n" // x` + "\n;")
	f.Add(`x required; y sufficient z=w;`)
	f.Add(`x required k="unterminated`)
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := ParseJAAS(s)
		if err != nil {
			return
		}
		out := formatJAAS(entries)
		again, err := ParseJAAS(out)
		if err != nil {
			t.Fatalf("%q formatted as %q, which does not parse: %v", s, out, err)
		}
		if !reflect.DeepEqual(entries, again) {
			t.Fatalf("%q: %+v formatted as %q parses as %+v", s, entries, out, again)
		}
	})
}

// formatJAAS writes entries back in the option form, every value quoted
// and escaped, options sorted by name.
func formatJAAS(entries []JAASEntry) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.LoginModule + " " + e.Flag)
		for _, k := range slices.Sorted(maps.Keys(e.Options)) {
			b.WriteString(" " + k + `="`)
			for _, c := range []byte(e.Options[k]) {
				switch c {
				case '"', '\\':
					b.WriteByte('\\')
					b.WriteByte(c)
				case '\n':
					b.WriteString(`\n`)
				case '\r':
					b.WriteString(`\r`)
				default:
					b.WriteByte(c)
				}
			}
			b.WriteByte('"')
		}
		b.WriteString(";\n")
	}
	return b.String()
}

// FuzzOAuthInitialResponse parses arbitrary OAUTHBEARER initial responses
// and checks that what parses re-encodes to the same fields.
func FuzzOAuthInitialResponse(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln\x01\x01"))
	f.Add([]byte("n,a=alice,\x01auth=bearer  a.b.c\x01traceid=abc def\x01\x01"))
	f.Add([]byte("n,,\x01\x01"))
	f.Add([]byte("\x01"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := parseOAuthInitialResponse(msg)
		if err != nil {
			return
		}
		gs2 := "n,,"
		if r.authzid != "" {
			gs2 = "n,a=" + scramEscape(r.authzid) + ","
		}
		enc := gs2 + "\x01auth=Bearer " + r.token + "\x01"
		for _, k := range slices.Sorted(maps.Keys(r.extensions)) {
			enc += k + "=" + r.extensions[k] + "\x01"
		}
		again, err := parseOAuthInitialResponse([]byte(enc + "\x01"))
		if err != nil || !reflect.DeepEqual(r, again) {
			t.Fatalf("%q parsed as %+v; re-encoded, %+v, %v", msg, r, again, err)
		}
	})
}
