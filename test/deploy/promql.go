package deploy

import (
	"fmt"
	"strings"
)

// refs are the metric names and label names a PromQL expression uses.
type refs struct {
	metrics []string
	labels  []string // in matchers and in by/without/on/ignoring/group_left/group_right lists
}

// keywords are PromQL words that are neither metrics nor functions.
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// labelListKeywords take a parenthesised list of label names.
var labelListKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// aggregations may put their by or without clause before their
// parenthesised argument.
var aggregations = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

type token struct {
	kind byte // 'i' identifier, 's' string, 'n' number, 'p' punctuation
	text string
}

// tokenize splits a PromQL expression. Grafana variables ($job,
// ${job}, $__rate_interval) and range or subquery brackets are dropped.
func tokenize(expr string) ([]token, error) {
	var out []token
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d in %q", i, expr)
			}
			out = append(out, token{'s', expr[i+1 : j]})
			i = j + 1
		case c == '$':
			j := i + 1
			if j < len(expr) && expr[j] == '{' {
				k := strings.IndexByte(expr[j:], '}')
				if k < 0 {
					return nil, fmt.Errorf("unterminated ${ at %d in %q", i, expr)
				}
				i = j + k + 1
				continue
			}
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			i = j
		case c == '[':
			k := strings.IndexByte(expr[i:], ']')
			if k < 0 {
				return nil, fmt.Errorf("unterminated [ at %d in %q", i, expr)
			}
			i += k + 1
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			out = append(out, token{'i', expr[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == '.') {
				j++
			}
			out = append(out, token{'n', expr[i:j]})
			i = j
		case strings.IndexByte("(){},=!~<>+-*/^%@", c) >= 0:
			out = append(out, token{'p', string(c)})
			i++
		default:
			return nil, fmt.Errorf("unexpected %q at %d in %q", c, i, expr)
		}
	}
	return out, nil
}

// parseRefs finds the metrics and labels of expr: an identifier followed
// by ( is a function or aggregation, a keyword is skipped (with the label
// list of by, on and the like read as labels), the label names of a
// {matcher, ...} list are labels, and every other identifier is a metric.
func parseRefs(expr string) (refs, error) {
	toks, err := tokenize(expr)
	if err != nil {
		return refs{}, err
	}
	var r refs
	next := func(i int) token {
		if i+1 < len(toks) {
			return toks[i+1]
		}
		return token{}
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == 'p' && t.text == "{":
			// Matchers: name op "value", comma separated.
			for i++; i < len(toks) && toks[i].text != "}"; i++ {
				if toks[i].kind == 'i' {
					r.labels = append(r.labels, toks[i].text)
					for i+1 < len(toks) && toks[i+1].kind == 'p' && strings.Contains("=!~", toks[i+1].text) {
						i++
					}
					if i+1 >= len(toks) || toks[i+1].kind != 's' {
						return refs{}, fmt.Errorf("matcher %s without a string value in %q", toks[i].text, expr)
					}
					i++
				}
			}
			if i >= len(toks) {
				return refs{}, fmt.Errorf("unterminated { in %q", expr)
			}
		case t.kind != 'i':
		case labelListKeywords[t.text] && next(i).text == "(":
			for i += 2; i < len(toks) && toks[i].text != ")"; i++ {
				if toks[i].kind == 'i' {
					r.labels = append(r.labels, toks[i].text)
				}
			}
		case keywords[t.text]:
		case next(i).text == "(", aggregations[t.text] && (next(i).text == "by" || next(i).text == "without"):
			// a function or an aggregation
		default:
			r.metrics = append(r.metrics, t.text)
		}
	}
	return r, nil
}

// templateLabels are the label names of {{label}} (Grafana legends) and
// {{ $labels.label }} (alert annotations) in s.
func templateLabels(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			return out
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return out
		}
		in := strings.TrimSpace(s[i+2 : i+j])
		s = s[i+j+2:]
		if l, ok := strings.CutPrefix(in, "$labels."); ok {
			out = append(out, strings.Fields(l)[0])
		} else if !strings.ContainsAny(in, "$ |.") && in != "" {
			out = append(out, in)
		}
	}
}
