package config

import (
	"errors"
	"fmt"
)

// Sentinels that every KeyError unwraps to, so callers can tell the two
// failure kinds apart with errors.Is (the broker maps both to INVALID_CONFIG).
var (
	// ErrUnknownKey: the key is not a configuration Strata knows.
	ErrUnknownKey = errors.New("config: unknown key")
	// ErrInvalidValue: the key is known but its value is malformed, out of
	// range or in conflict with another key.
	ErrInvalidValue = errors.New("config: invalid value")
)

// KeyError is the error for one bad key. Its message always names the key:
//
//	config: unknown key "log.segement.bytes" (did you mean "log.segment.bytes"?)
//	config: log.segment.bytes: invalid integer "abc"
type KeyError struct {
	Key    string
	Err    error  // ErrUnknownKey or ErrInvalidValue
	Detail string // what is wrong with the value, or a spelling hint
	Origin string // where the key came from ("server.properties:12", "--set"), if known
}

// Error renders the message described on KeyError.
func (e *KeyError) Error() string {
	var s string
	if e.Err == ErrUnknownKey {
		s = fmt.Sprintf("config: unknown key %q", e.Key)
		if e.Detail != "" {
			s += " (" + e.Detail + ")"
		}
	} else {
		s = fmt.Sprintf("config: %s: %s", e.Key, e.Detail)
	}
	if e.Origin != "" {
		s += " [" + e.Origin + "]"
	}
	return s
}

// Unwrap returns ErrUnknownKey or ErrInvalidValue.
func (e *KeyError) Unwrap() error { return e.Err }

func unknownKey(key string, known []string) *KeyError {
	e := &KeyError{Key: key, Err: ErrUnknownKey}
	if s := suggest(key, known); s != "" {
		e.Detail = fmt.Sprintf("did you mean %q?", s)
	}
	return e
}

func invalid(key string, err error) *KeyError {
	return &KeyError{Key: key, Err: ErrInvalidValue, Detail: err.Error()}
}

// suggest returns the known name closest to key by edit distance, if it is
// close enough to be a likely typo.
func suggest(key string, known []string) string {
	best, bestD := "", len(key)/3+1
	for _, k := range known {
		if d := editDistance(key, k, bestD); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is
// at least limit (the rows stop early once every cell exceeds it).
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
