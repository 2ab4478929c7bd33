package deploy

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// unit is a parsed systemd unit file: values by section and key, in file
// order (a key may repeat).
type unit map[string]map[string][]string

// parseUnit reads a systemd unit file: [Section] lines, Key=Value lines,
// comments starting with # or ;. Continuation lines are not supported
// (the units here use none).
func parseUnit(path string) (unit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case strings.HasSuffix(line, "\\"):
			return nil, fmt.Errorf("%s:%d: continuation lines are not supported", path, n)
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("%s:%d: want Key=Value in a section: %q", path, n, line)
			}
			k = strings.TrimSpace(k)
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	return u, sc.Err()
}

// get is the last value of key in section ("" when unset), as systemd
// applies the last assignment.
func (u unit) get(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// systemdDuration parses a systemd time span: a bare number is seconds;
// otherwise a sequence of numbers with units (ms, s, min, h, as in "1min
// 30s").
func systemdDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(n * float64(time.Second)), nil
	}
	units := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "sec": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour, "hr": time.Hour}
	var total time.Duration
	for f := range strings.FieldsSeq(s) {
		i := strings.IndexFunc(f, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i <= 0 {
			return 0, fmt.Errorf("time span %q: want a number and a unit", s)
		}
		n, err := strconv.ParseFloat(f[:i], 64)
		u, ok := units[f[i:]]
		if err != nil || !ok {
			return 0, fmt.Errorf("time span %q: bad part %q", s, f)
		}
		total += time.Duration(n * float64(u))
	}
	return total, nil
}
