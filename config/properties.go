package config

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// property is one key=value pair of a properties file and the line its
// logical line started on.
type property struct {
	key, value string
	line       int
}

// ParseProperties reads a Java .properties file: blank lines and lines
// starting with # or ! are skipped; a key ends at the first unescaped '=',
// ':' or white space, followed by optional white space and one optional '='
// or ':'; a line ending in an odd number of backslashes continues on the
// next (whose leading white space is dropped); \t \n \r \f \uXXXX escapes
// are decoded and any other escaped character stands for itself. Unlike
// Java, trailing white space of a value is trimmed too. A key set twice
// keeps the last value.
func ParseProperties(r io.Reader) (map[string]string, error) {
	props, err := readProperties(r)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	m := make(map[string]string, len(props))
	for _, p := range props {
		m[p.key] = p.value
	}
	return m, nil
}

func readProperties(r io.Reader) ([]property, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var (
		out     []property
		logical strings.Builder
		start   int // line number where the current logical line began
		lineNo  int
	)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if lineNo == 1 {
			line = strings.TrimPrefix(line, "\ufeff") // UTF-8 byte order mark
		}
		if logical.Len() == 0 {
			line = strings.TrimLeft(line, " \t\f")
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			start = lineNo
		} else {
			line = strings.TrimLeft(line, " \t\f")
		}
		if continues(line) {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		p, err := splitProperty(logical.String())
		logical.Reset()
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		p.line = start
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if logical.Len() > 0 { // continuation at end of input: Java keeps what it has
		p, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		p.line = start
		out = append(out, p)
	}
	return out, nil
}

// continues reports whether line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits one logical line into an unescaped key and value.
func splitProperty(s string) (property, error) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	i = min(i, len(s))
	rawKey, rest := s[:i], s[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescape(rawKey)
	if err != nil {
		return property{}, err
	}
	val, err := unescape(rest)
	if err != nil {
		return property{}, fmt.Errorf("key %q: %w", key, err)
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return property{}, fmt.Errorf("empty key in %q", s)
	}
	return property{key: key, value: strings.TrimSpace(val)}, nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash is dropped, as Java does
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			r := rune(n)
			if !utf8.ValidRune(r) {
				r = utf8.RuneError
			}
			b.WriteRune(r)
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
