package sasl

import (
	"maps"
	"strings"
	"testing"
)

func TestParseJAASKafkaExample(t *testing.T) {
	e, err := ParseJAASConfig(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}
	if e.LoginModule != PlainLoginModule || e.Flag != "required" || !maps.Equal(e.Options, want) {
		t.Fatalf("got %+v", e)
	}
}

func TestParseJAASQuotingAndComments(t *testing.T) {
	cfg := "  com.example.Module   REQUIRED /* block\ncomment */\n" +
		`a="x\"y\\z" b='single "inner"' c=bare-word.1 // to end of line` + "\n" +
		`d="tab\there" e="\101\7" f="\q" g="";`
	e, err := ParseJAASConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a": `x"y\z`, "b": `single "inner"`, "c": "bare-word.1",
		"d": "tab\there", "e": "A\a", "f": "q", "g": "",
	}
	if e.LoginModule != "com.example.Module" || e.Flag != "required" || !maps.Equal(e.Options, want) {
		t.Fatalf("got %+v", e)
	}
}

func TestParseJAASSeveralModules(t *testing.T) {
	entries, err := ParseJAAS(`a.A required; b.B optional x="1";`)
	if err != nil || len(entries) != 2 || entries[1].Options["x"] != "1" {
		t.Fatalf("got %+v, %v", entries, err)
	}
	if _, err := ParseJAASConfig(`a.A required; b.B optional x="1";`); err == nil || !strings.Contains(err.Error(), "exactly 1") {
		t.Fatalf("two modules in sasl.jaas.config: %v", err)
	}
}

func TestParseJAASErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "no login module"},
		{`  /* only a comment */ `, "no login module"},
		{`a.A`, "control flag"},
		{`a.A required`, "not terminated by a semicolon"},
		{`a.A mandatory;`, "invalid control flag"},
		{`a.A required x="1" x="2";`, "given twice"},
		{`a.A required x=;`, "no value"},
		{`a.A required x;`, "expected '='"},
		{`a.A required x="1`, "unterminated quoted value"},
		{"a.A required x=\"1\n\";", "past the end of the line"},
		{`a.A required /* x="1";`, "unterminated /* comment"},
		{`a.A required ="1";`, "expected an option name"},
		{`; a.A required;`, "expected a login module class name"},
		{`"a.A" required;`, "expected a login module class name"},
	} {
		_, err := ParseJAAS(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseJAAS(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}
