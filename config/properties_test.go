package config

import (
	"maps"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"comments and blanks", "# c\n! also\n\n   \n  # indented\n", map[string]string{}},
		{"equals", "a=1\nb = 2\n", map[string]string{"a": "1", "b": "2"}},
		{"colon", "a: 1\nb:2\n", map[string]string{"a": "1", "b": "2"}},
		{"whitespace separator", "a 1\nb\t\t2\n", map[string]string{"a": "1", "b": "2"}},
		{"whitespace then equals", "a   =   1", map[string]string{"a": "1"}},
		{"leading and trailing space trimmed", "   a=1   \n", map[string]string{"a": "1"}},
		{"key only", "a\nb=\nc:", map[string]string{"a": "", "b": "", "c": ""}},
		{"value keeps separators", "a=b=c:d e", map[string]string{"a": "b=c:d e"}},
		{"continuation", "listeners=PLAINTEXT://a:1,\\\n    PLAINTEXT://b:2\n", map[string]string{"listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"}},
		{"continuation chain", "a=1\\\n 2\\\n\t3\nb=4", map[string]string{"a": "123", "b": "4"}},
		{"even backslashes do not continue", "a=x\\\\\nb=2", map[string]string{"a": `x\`, "b": "2"}},
		{"continuation at end of input", "a=1\\", map[string]string{"a": "1"}},
		{"comment is not continued", "# c \\\na=1", map[string]string{"a": "1"}},
		{"hash inside value", "a=1#2", map[string]string{"a": "1#2"}},
		{"escaped separator in key", `a\=b=c`, map[string]string{"a=b": "c"}},
		{"escaped space in key", `a\ b=c`, map[string]string{"a b": "c"}},
		{"escapes in value", `a=x\ty\u0041\z`, map[string]string{"a": "x\tyAz"}},
		{"last wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"crlf", "a=1\r\nb=2\r\n", map[string]string{"a": "1", "b": "2"}},
		{"bom", "\ufeffa=1", map[string]string{"a": "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProperties(strings.NewReader(tc.in))
			if err != nil {
				t.Fatalf("ParseProperties: %v", err)
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a=1\n=2", "line 2: empty key"},
		{"a=\\u12", `key "a": malformed \u escape`},
		{"a=\\uzzzz", `malformed \u escape`},
	}
	for _, tc := range tests {
		_, err := ParseProperties(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseProperties(%q) = %v, want error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestReadPropertiesLines(t *testing.T) {
	props, err := readProperties(strings.NewReader("# c\na=1\n\nb=2\\\n 3\nc=4\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []property{{"a", "1", 2}, {"b", "23", 4}, {"c", "4", 6}}
	if len(props) != len(want) {
		t.Fatalf("got %v, want %v", props, want)
	}
	for i := range want {
		if props[i] != want[i] {
			t.Errorf("prop %d = %+v, want %+v", i, props[i], want[i])
		}
	}
}

func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{"a=1", "a\\\n b", "\\u0041=\\", "# x\n!y\nk:v", "a\\=b c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			return
		}
		for k := range m {
			if k == "" || strings.TrimSpace(k) != k {
				t.Fatalf("bad key %q from %q", k, in)
			}
		}
		// Parsing must never panic on the result of a --set either.
		for k, v := range m {
			_, _ = Parse(map[string]string{k: v})
		}
	})
}
