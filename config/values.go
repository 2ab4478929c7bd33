package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
)

// Kafka's DescribeConfigs type codes (ConfigType), used in Entry.Type.
const (
	TypeUnknown  int8 = 0
	TypeBoolean  int8 = 1
	TypeString   int8 = 2
	TypeInt      int8 = 3
	TypeShort    int8 = 4
	TypeLong     int8 = 5
	TypeDouble   int8 = 6
	TypeList     int8 = 7
	TypeClass    int8 = 8
	TypePassword int8 = 9
)

// field binds one key to one place in a struct S: set parses and validates
// the (trimmed) text and stores it, get renders the stored value in its
// canonical text form, and targets points to every field set stores into
// (so a test can check that each key reaches a field something reads).
// Both tables (broker and topic) are built from these binders, so a value
// is parsed the same way wherever it appears.
type field[S any] struct {
	set     func(s *S, v string) error
	get     func(s *S) string
	targets func(s *S) []any
}

type integer interface{ ~int16 | ~int32 | ~int64 }

func maxOf[T integer]() int64 {
	var x T
	switch any(x).(type) {
	case int16:
		return math.MaxInt16
	case int32:
		return math.MaxInt32
	default:
		return math.MaxInt64
	}
}

func parseInt(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid integer %q", v)
	}
	if n < lo {
		return 0, fmt.Errorf("value %d must be at least %d", n, lo)
	}
	if n > hi {
		return 0, fmt.Errorf("value %d must be at most %d", n, hi)
	}
	return n, nil
}

// intField accepts integers >= lo that fit T.
func intField[S any, T integer](lo int64, p func(*S) *T) field[S] {
	return intRange(lo, maxOf[T](), p)
}

// intRange accepts integers in [lo, hi].
func intRange[S any, T integer](lo, hi int64, p func(*S) *T) field[S] {
	hi = min(hi, maxOf[T]())
	return field[S]{
		set: func(s *S, v string) error {
			n, err := parseInt(v, lo, hi)
			if err != nil {
				return err
			}
			*p(s) = T(n)
			return nil
		},
		get:     func(s *S) string { return strconv.FormatInt(int64(*p(s)), 10) },
		targets: func(s *S) []any { return []any{p(s)} },
	}
}

func parseBool(v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, fmt.Errorf("invalid boolean %q (want true or false)", v)
}

func boolField[S any](p func(*S) *bool) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			b, err := parseBool(v)
			if err == nil {
				*p(s) = b
			}
			return err
		},
		get:     func(s *S) string { return strconv.FormatBool(*p(s)) },
		targets: func(s *S) []any { return []any{p(s)} },
	}
}

// floatRange accepts finite numbers in [lo, hi].
func floatRange[S any](lo, hi float64, p func(*S) *float64) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("invalid number %q", v)
			}
			if f < lo || f > hi {
				return fmt.Errorf("value %v must be between %v and %v", f, lo, hi)
			}
			*p(s) = f
			return nil
		},
		get:     func(s *S) string { return strconv.FormatFloat(*p(s), 'g', -1, 64) },
		targets: func(s *S) []any { return []any{p(s)} },
	}
}

// strField stores any text that check accepts (check may be nil).
func strField[S any](p func(*S) *string, check func(string) error) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			if check != nil {
				if err := check(v); err != nil {
					return err
				}
			}
			*p(s) = v
			return nil
		},
		get:     func(s *S) string { return *p(s) },
		targets: func(s *S) []any { return []any{p(s)} },
	}
}

// enumField accepts one of allowed, case-insensitively, and stores the
// canonical spelling.
func enumField[S any](p func(*S) *string, allowed ...string) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			c, err := oneOf(v, allowed)
			if err == nil {
				*p(s) = c
			}
			return err
		},
		get:     func(s *S) string { return *p(s) },
		targets: func(s *S) []any { return []any{p(s)} },
	}
}

func oneOf(v string, allowed []string) (string, error) {
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a, nil
		}
	}
	return "", fmt.Errorf("invalid value %q (want one of %s)", v, strings.Join(allowed, ", "))
}

// splitList splits a comma-separated list; an empty text is an empty list,
// an empty item is an error.
func splitList(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	items := strings.Split(v, ",")
	for i, it := range items {
		items[i] = strings.TrimSpace(it)
		if items[i] == "" {
			return nil, fmt.Errorf("empty item in list %q", v)
		}
	}
	return items, nil
}

// listField stores a comma-separated list; item validates and canonicalises
// each element (nil keeps them as written); show renders one element back.
func listField[S any](p func(*S) *[]string, item func(string) (string, error), show func(string) string) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			items, err := splitList(v)
			if err != nil {
				return err
			}
			if item != nil {
				for i, it := range items {
					if items[i], err = item(it); err != nil {
						return err
					}
				}
			}
			*p(s) = items
			return nil
		},
		get: func(s *S) string {
			out := make([]string, len(*p(s)))
			for i, it := range *p(s) {
				if show != nil {
					it = show(it)
				}
				out[i] = it
			}
			return strings.Join(out, ",")
		},
		targets: func(s *S) []any { return []any{p(s)} },
	}
}

// Cleanup policies and timestamp types, Kafka's spellings.
const (
	CleanupDelete  = "delete"
	CleanupCompact = "compact"

	TimestampCreateTime    = "CreateTime"
	TimestampLogAppendTime = "LogAppendTime"
)

// compressionTypes are the values of compression.type, as in Kafka.
var compressionTypes = []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}

// policyField parses cleanup.policy ("delete", "compact", both, or empty as
// Kafka allows: neither deletion nor compaction) and, when flags is not nil,
// also sets the compact and delete booleans it points to.
func policyField[S any](p func(*S) *string, flags func(*S) (compact, del *bool)) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			items, err := splitList(v)
			if err != nil {
				return err
			}
			var c, d bool
			for i, it := range items {
				if items[i], err = oneOf(it, []string{CleanupDelete, CleanupCompact}); err != nil {
					return err
				}
				c = c || items[i] == CleanupCompact
				d = d || items[i] == CleanupDelete
			}
			*p(s) = strings.Join(items, ",")
			if flags != nil {
				cp, dp := flags(s)
				*cp, *dp = c, d
			}
			return nil
		},
		get: func(s *S) string { return *p(s) },
		targets: func(s *S) []any {
			if flags == nil {
				return []any{p(s)}
			}
			cp, dp := flags(s)
			return []any{p(s), cp, dp}
		},
	}
}

// timestampTypeField parses message.timestamp.type; logAppend, when not
// nil, points to the boolean form.
func timestampTypeField[S any](p func(*S) *string, logAppend func(*S) *bool) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			c, err := oneOf(v, []string{TimestampCreateTime, TimestampLogAppendTime})
			if err != nil {
				return err
			}
			*p(s) = c
			if logAppend != nil {
				*logAppend(s) = c == TimestampLogAppendTime
			}
			return nil
		},
		get: func(s *S) string { return *p(s) },
		targets: func(s *S) []any {
			if logAppend == nil {
				return []any{p(s)}
			}
			return []any{p(s), logAppend(s)}
		},
	}
}

func levelField[S any](p func(*S) *slog.Level) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			switch strings.ToLower(v) {
			case "debug", "trace":
				*p(s) = slog.LevelDebug
			case "info":
				*p(s) = slog.LevelInfo
			case "warn", "warning":
				*p(s) = slog.LevelWarn
			case "error":
				*p(s) = slog.LevelError
			default:
				return fmt.Errorf("invalid log level %q (want debug, info, warn or error)", v)
			}
			return nil
		},
		get:     func(s *S) string { return strings.ToLower(p(s).String()) },
		targets: func(s *S) []any { return []any{p(s)} },
	}
}

// hostPort validates host:port (host may be empty: all interfaces; port 0:
// any free port) and returns it in canonical form.
func hostPort(v string) (string, error) {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", fmt.Errorf("invalid address %q: want host:port", v)
	}
	if _, err := parseInt(port, 0, math.MaxUint16); err != nil {
		return "", fmt.Errorf("invalid port in %q", v)
	}
	if strings.ContainsAny(host, " \t/") {
		return "", fmt.Errorf("invalid host in %q", v)
	}
	return net.JoinHostPort(host, port), nil
}

// optionalHostPort accepts "" (disabled) or host:port.
func optionalHostPort(v string) error {
	if v == "" {
		return nil
	}
	_, err := hostPort(v)
	return err
}

// endpoint accepts an etcd endpoint: host:port or an http(s):// URL.
func endpoint(v string) (string, error) {
	rest, ok := strings.CutPrefix(v, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(v, "https://")
	}
	if ok {
		if _, err := hostPort(strings.TrimSuffix(rest, "/")); err != nil {
			return "", err
		}
		return v, nil
	}
	if strings.Contains(v, "://") {
		return "", fmt.Errorf("invalid endpoint %q: want host:port or http(s)://host:port", v)
	}
	return hostPort(v)
}

func nonEmpty(v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	return nil
}

// etcdPrefix: a key prefix such as "/strata": leading slash, no trailing one.
func etcdPrefix(v string) error {
	if len(v) < 2 || v[0] != '/' || strings.HasSuffix(v, "/") || strings.ContainsAny(v, " \t") {
		return fmt.Errorf("invalid prefix %q: want a path such as /strata (leading slash, no trailing slash)", v)
	}
	return nil
}

// httpURL accepts "" or an http(s) URL such as http://127.0.0.1:9000.
func httpURL(v string) error {
	if v == "" {
		return nil
	}
	if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
		return fmt.Errorf("invalid URL %q: want http://host:port or https://host", v)
	}
	return nil
}

// connOverridesField parses max.connections.per.ip.overrides as Kafka
// does: comma-separated host:count items, each split at its last colon
// (so an IPv6 address needs no brackets). It renders them sorted by host.
func connOverridesField[S any](p func(*S) *map[string]int32) field[S] {
	return field[S]{
		set: func(s *S, v string) error {
			items, err := splitList(v)
			if err != nil {
				return err
			}
			m := make(map[string]int32, len(items))
			for _, it := range items {
				i := strings.LastIndex(it, ":")
				if i < 0 {
					return fmt.Errorf("invalid override %q: want host:count", it)
				}
				host := strings.TrimSpace(it[:i])
				if host == "" {
					return fmt.Errorf("invalid override %q: empty host", it)
				}
				n, err := parseInt(strings.TrimSpace(it[i+1:]), 0, math.MaxInt32)
				if err != nil {
					return fmt.Errorf("override %q: %w", it, err)
				}
				m[host] = int32(n)
			}
			*p(s) = m
			return nil
		},
		get: func(s *S) string {
			hosts := make([]string, 0, len(*p(s)))
			for h := range *p(s) {
				hosts = append(hosts, h)
			}
			sort.Strings(hosts)
			for i, h := range hosts {
				hosts[i] = h + ":" + strconv.Itoa(int((*p(s))[h]))
			}
			return strings.Join(hosts, ",")
		},
		targets: func(s *S) []any { return []any{p(s)} },
	}
}
