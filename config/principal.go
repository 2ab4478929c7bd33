package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// PrincipalRules is ssl.principal.mapping.rules parsed: Kafka's
// SslPrincipalMapper, which turns a client certificate's subject
// distinguished name (RFC 2253) into a principal name.
type PrincipalRules struct {
	rules []principalRule
	text  string
}

// principalRule is DEFAULT (re nil: the DN itself) or
// RULE:pattern/replacement/[LU].
type principalRule struct {
	whole, re    *regexp.Regexp // whole: the pattern anchored, for Java's matches()
	replacement  string         // a regexp.Expand template
	lower, upper bool
}

// ErrNoPrincipalRule: no rule matched a distinguished name.
var ErrNoPrincipalRule = errors.New("no principal mapping rule applies")

// ParsePrincipalRules parses ssl.principal.mapping.rules as Kafka does: a
// comma-separated list of DEFAULT and RULE:pattern/replacement/ with an
// optional L or U flag. In pattern and replacement a backslash escapes the
// next character (so \/ is a slash); replacement names groups with $1 as
// Java does. An empty list is DEFAULT.
func ParsePrincipalRules(s string) (*PrincipalRules, error) {
	p := &PrincipalRules{text: s}
	rest := strings.TrimSpace(s)
	for rest != "" {
		var r principalRule
		var err error
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			if r, rest, err = parseRule(rest[len("RULE:"):]); err != nil {
				return nil, err
			}
		default:
			end, _, _ := strings.Cut(rest, ",")
			return nil, fmt.Errorf("invalid rule %q: want DEFAULT or RULE:pattern/replacement/[LU]", strings.TrimSpace(end))
		}
		rest = strings.TrimLeft(rest, " \t")
		if rest != "" {
			if rest[0] != ',' {
				end, _, _ := strings.Cut(rest, ",")
				return nil, fmt.Errorf("invalid rule: unmatched substring %q", end)
			}
			rest = strings.TrimLeft(rest[1:], " \t")
		}
		p.rules = append(p.rules, r)
	}
	if len(p.rules) == 0 {
		p.rules = []principalRule{{}}
	}
	return p, nil
}

// parseRule parses pattern/replacement/[LU] and returns what follows.
func parseRule(s string) (principalRule, string, error) {
	var r principalRule
	pattern, s, ok := cutUnescaped(s)
	if !ok {
		return r, "", fmt.Errorf("invalid rule RULE:%s: want RULE:pattern/replacement/[LU]", s)
	}
	repl, s, ok := cutUnescaped(s)
	if !ok {
		return r, "", fmt.Errorf("invalid rule RULE:%s/%s: want RULE:pattern/replacement/[LU]", pattern, s)
	}
	if s != "" && (s[0] == 'L' || s[0] == 'U') {
		r.lower, r.upper = s[0] == 'L', s[0] == 'U'
		s = s[1:]
	}
	var err error
	if r.re, err = regexp.Compile(pattern); err != nil {
		return r, "", fmt.Errorf("invalid rule pattern %q: %w", pattern, err)
	}
	r.whole = regexp.MustCompile(`^(?:` + pattern + `)$`)
	if r.replacement, err = javaReplacement(repl, r.re.NumSubexp()); err != nil {
		return r, "", fmt.Errorf("invalid rule replacement %q: %w", repl, err)
	}
	return r, s, nil
}

// cutUnescaped cuts s at its first slash not escaped by a backslash.
func cutUnescaped(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// javaReplacement turns a Java Matcher replacement (\x a literal x, $n
// and ${name} groups) into a regexp.Expand template.
func javaReplacement(s string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i+1 == len(s) {
				return "", errors.New("character to be escaped is missing")
			}
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case c == '$' && i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", errors.New("named capturing group is missing trailing '}'")
			}
			b.WriteString(s[i : i+end+1])
			i += end
		case c == '$':
			j := i + 1
			if j == len(s) || s[j] < '0' || s[j] > '9' {
				return "", errors.New("illegal group reference")
			}
			n := int(s[j] - '0')
			for j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9' && n*10+int(s[j+1]-'0') <= groups {
				j++
				n = n*10 + int(s[j]-'0')
			}
			if n > groups {
				return "", fmt.Errorf("no group %d", n)
			}
			fmt.Fprintf(&b, "${%d}", n)
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Name maps a distinguished name to a principal name with the first rule
// that matches it (DEFAULT: the name itself), or fails with
// ErrNoPrincipalRule.
func (p *PrincipalRules) Name(dn string) (string, error) {
	for _, r := range p.rules {
		if r.re == nil {
			return dn, nil
		}
		if !r.whole.MatchString(dn) {
			continue
		}
		out := r.re.ReplaceAllString(dn, r.replacement)
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w to %s, rules %s", ErrNoPrincipalRule, dn, p.text)
}
