package sasl

import (
	"fmt"
	"strings"
)

// JAASEntry is one login module of a JAAS configuration in the option
// form of Kafka's sasl.jaas.config:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required
//	    username="admin" password="admin-secret" user_alice="alice-secret";
type JAASEntry struct {
	// LoginModule is the module's class name.
	LoginModule string
	// Flag is the control flag, lower case: required, requisite,
	// sufficient or optional.
	Flag string
	// Options are the module's key=value options.
	Options map[string]string
}

// Login module class names of Kafka's SASL mechanisms.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// ParseJAASConfig parses a sasl.jaas.config value, which Kafka requires to
// hold exactly one login module.
func ParseJAASConfig(s string) (JAASEntry, error) {
	entries, err := ParseJAAS(s)
	if err != nil {
		return JAASEntry{}, err
	}
	if len(entries) != 1 {
		return JAASEntry{}, fmt.Errorf("jaas config: %d login modules, want exactly 1", len(entries))
	}
	return entries[0], nil
}

// ParseJAAS parses JAAS login module entries in Kafka's option form:
// `<class> <flag> (<key>=<value>)*;` repeated. It follows the tokenizer
// of Kafka's JaasConfig — values quoted with " or ' (Java escapes inside)
// or bare words, // and /* */ comments — but is stricter: a duplicate
// key, an unterminated quote or comment, a quote spanning a line, a
// missing semicolon and an unknown control flag are errors that name the
// byte offset.
func ParseJAAS(s string) ([]JAASEntry, error) {
	t := jaasTokenizer{s: s}
	var entries []JAASEntry
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		e, err := t.entry(tok)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("jaas config: no login module")
	}
	return entries, nil
}

// entry parses one login module entry whose first token is first.
func (t *jaasTokenizer) entry(first jaasToken) (JAASEntry, error) {
	if first.kind != tokWord {
		return JAASEntry{}, t.errorf(first, "expected a login module class name")
	}
	e := JAASEntry{LoginModule: first.text, Options: map[string]string{}}
	flag, err := t.next()
	if err != nil {
		return JAASEntry{}, err
	}
	if flag.kind != tokWord {
		return JAASEntry{}, t.errorf(flag, "expected a control flag after %q", e.LoginModule)
	}
	switch f := strings.ToLower(flag.text); f {
	case "required", "requisite", "sufficient", "optional":
		e.Flag = f
	default:
		return JAASEntry{}, t.errorf(flag, "invalid control flag %q (want required, requisite, sufficient or optional)", flag.text)
	}
	for {
		key, err := t.next()
		if err != nil {
			return JAASEntry{}, err
		}
		switch key.kind {
		case tokSemicolon:
			return e, nil
		case tokEOF:
			return JAASEntry{}, t.errorf(key, "login module %q not terminated by a semicolon", e.LoginModule)
		case tokWord:
		default:
			return JAASEntry{}, t.errorf(key, "expected an option name")
		}
		if eq, err := t.next(); err != nil {
			return JAASEntry{}, err
		} else if eq.kind != tokEquals {
			return JAASEntry{}, t.errorf(eq, "option %q: expected '='", key.text)
		}
		val, err := t.next()
		if err != nil {
			return JAASEntry{}, err
		}
		if val.kind != tokWord && val.kind != tokQuoted {
			return JAASEntry{}, t.errorf(val, "option %q: no value", key.text)
		}
		if _, dup := e.Options[key.text]; dup {
			return JAASEntry{}, t.errorf(key, "option %q given twice", key.text)
		}
		e.Options[key.text] = val.text
	}
}

type jaasTokenKind int

const (
	tokEOF jaasTokenKind = iota
	tokWord
	tokQuoted
	tokEquals
	tokSemicolon
)

type jaasToken struct {
	kind jaasTokenKind
	text string
	pos  int
}

// jaasTokenizer splits a JAAS configuration as Kafka's StreamTokenizer
// set-up does: bytes up to ' ' are space, ';' and '=' are tokens, " and '
// quote, / starts a comment, everything else forms words.
type jaasTokenizer struct {
	s   string
	pos int
}

func (t *jaasTokenizer) errorf(tok jaasToken, format string, args ...any) error {
	return fmt.Errorf("jaas config at offset %d: %s", tok.pos, fmt.Sprintf(format, args...))
}

func isJAASWordByte(c byte) bool {
	return c > ' ' && c != ';' && c != '=' && c != '"' && c != '\'' && c != '/'
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	if err := t.skipSpaceAndComments(); err != nil {
		return jaasToken{}, err
	}
	start := t.pos
	if t.pos >= len(t.s) {
		return jaasToken{kind: tokEOF, pos: start}, nil
	}
	switch c := t.s[t.pos]; {
	case c == ';':
		t.pos++
		return jaasToken{kind: tokSemicolon, pos: start}, nil
	case c == '=':
		t.pos++
		return jaasToken{kind: tokEquals, pos: start}, nil
	case c == '"' || c == '\'':
		text, err := t.quoted(c)
		return jaasToken{kind: tokQuoted, text: text, pos: start}, err
	default:
		for t.pos < len(t.s) && isJAASWordByte(t.s[t.pos]) {
			t.pos++
		}
		return jaasToken{kind: tokWord, text: t.s[start:t.pos], pos: start}, nil
	}
}

func (t *jaasTokenizer) skipSpaceAndComments() error {
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		switch {
		case c <= ' ':
			t.pos++
		case c == '/' && strings.HasPrefix(t.s[t.pos:], "/*"):
			end := strings.Index(t.s[t.pos+2:], "*/")
			if end < 0 {
				return fmt.Errorf("jaas config at offset %d: unterminated /* comment", t.pos)
			}
			t.pos += 2 + end + 2
		case c == '/':
			// "//" and, as in Java's StreamTokenizer, a lone "/" comment
			// out the rest of the line.
			end := strings.IndexAny(t.s[t.pos:], "\r\n")
			if end < 0 {
				t.pos = len(t.s)
			} else {
				t.pos += end
			}
		default:
			return nil
		}
	}
	return nil
}

// quoted reads a quoted value opened by q at t.pos, with the escapes of
// Java's StreamTokenizer: \a \b \f \n \r \t \v, up to three octal digits
// (at most \377), and a backslash before any other byte standing for it.
func (t *jaasTokenizer) quoted(q byte) (string, error) {
	start := t.pos
	t.pos++
	var b strings.Builder
	for {
		if t.pos >= len(t.s) {
			return "", fmt.Errorf("jaas config at offset %d: unterminated quoted value", start)
		}
		c := t.s[t.pos]
		t.pos++
		switch {
		case c == q:
			return b.String(), nil
		case c == '\n' || c == '\r':
			return "", fmt.Errorf("jaas config at offset %d: quoted value runs past the end of the line", start)
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		if t.pos >= len(t.s) {
			return "", fmt.Errorf("jaas config at offset %d: unterminated quoted value", start)
		}
		e := t.s[t.pos]
		t.pos++
		switch e {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n := int(e - '0')
			max := 2
			if e > '3' {
				max = 1
			}
			for i := 0; i < max && t.pos < len(t.s) && t.s[t.pos] >= '0' && t.s[t.pos] <= '7'; i++ {
				n = n*8 + int(t.s[t.pos]-'0')
				t.pos++
			}
			b.WriteByte(byte(n))
		case '\n', '\r':
			return "", fmt.Errorf("jaas config at offset %d: quoted value runs past the end of the line", start)
		default:
			b.WriteByte(e)
		}
	}
}
