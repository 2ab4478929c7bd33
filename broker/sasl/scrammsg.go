package sasl

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// scramClientFirst is a parsed client-first-message (RFC 5802 §7).
type scramClientFirst struct {
	// gs2Header is "n,," or "n,a=<authzid>,", as sent; the client-final
	// message's c= must carry it back.
	gs2Header string
	authzid   string
	user      string
	nonce     string
	// bare is the client-first-message-bare, part of the AuthMessage.
	bare string
	// tokenAuth is Kafka's delegation-token extension (tokenauth=true).
	tokenAuth bool
}

// scramClientFinal is a parsed client-final-message.
type scramClientFinal struct {
	channelBinding []byte
	nonce          string
	proof          []byte
	// withoutProof is the client-final-message-without-proof, part of the
	// AuthMessage.
	withoutProof string
}

var errChannelBinding = errors.New("channel binding is not supported")

// parseScramClientFirst parses gs2-header client-first-message-bare:
//
//	n,[a=<authzid>],[m=...,]n=<user>,r=<nonce>[,<ext>=<value>]*
//
// Only the gs2 flag "n" is accepted, as Kafka does: a client that asks
// for channel binding (p=) is refused, and so is one that claims to
// support it (y), since no -PLUS mechanism is offered. A mandatory
// extension (m=) is refused as RFC 5802 requires. Of the optional
// extensions Kafka knows only tokenauth; others are ignored, as Kafka
// ignores them.
func parseScramClientFirst(msg string) (scramClientFirst, error) {
	var m scramClientFirst
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return m, errors.New("client-first message has no gs2 header")
	}
	switch {
	case flag == "n":
	case strings.HasPrefix(flag, "p="):
		return m, errChannelBinding
	case flag == "y":
		return m, errors.New("client-first message: gs2 flag y (client supports channel binding) is not accepted")
	default:
		return m, fmt.Errorf("client-first message: invalid gs2 flag %q", flag)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return m, errors.New("client-first message: gs2 header not terminated")
	}
	if authz != "" {
		z, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return m, fmt.Errorf("client-first message: invalid authzid field %q", authz)
		}
		var err error
		if m.authzid, err = scramUnescape(z); err != nil {
			return m, fmt.Errorf("client-first message authzid: %w", err)
		}
		if m.authzid == "" {
			return m, errors.New("client-first message: empty authzid")
		}
	}
	m.gs2Header = msg[:len(msg)-len(bare)]
	m.bare = bare
	fields := strings.Split(bare, ",")
	if strings.HasPrefix(fields[0], "m=") {
		return m, errors.New("client-first message: mandatory extension m= is not supported")
	}
	if len(fields) < 2 {
		return m, errors.New("client-first message: want n= and r=")
	}
	name, ok := strings.CutPrefix(fields[0], "n=")
	if !ok {
		return m, fmt.Errorf("client-first message: want n=, got %q", fields[0])
	}
	var err error
	if m.user, err = scramUnescape(name); err != nil {
		return m, fmt.Errorf("client-first message user name: %w", err)
	}
	if m.user == "" {
		return m, errors.New("client-first message: empty user name")
	}
	if m.nonce, ok = strings.CutPrefix(fields[1], "r="); !ok {
		return m, fmt.Errorf("client-first message: want r=, got %q", fields[1])
	}
	if err := checkNonce(m.nonce); err != nil {
		return m, fmt.Errorf("client-first message: %w", err)
	}
	for _, ext := range fields[2:] {
		k, v, ok := strings.Cut(ext, "=")
		if !ok || !validExtensionName(k) {
			return m, fmt.Errorf("client-first message: invalid extension %q", ext)
		}
		if k == "tokenauth" {
			m.tokenAuth = strings.EqualFold(v, "true")
		}
	}
	return m, nil
}

// parseScramClientFinal parses a client-final-message:
//
//	c=<base64 gs2 header>,r=<nonce>[,<ext>=<value>]*,p=<base64 proof>
func parseScramClientFinal(msg string) (scramClientFinal, error) {
	var m scramClientFinal
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return m, errors.New("client-final message has no proof")
	}
	m.withoutProof = msg[:i]
	proof, err := base64.StdEncoding.Strict().DecodeString(msg[i+len(",p="):])
	if err != nil || len(proof) == 0 {
		return m, errors.New("client-final message: proof is not base64")
	}
	m.proof = proof
	fields := strings.Split(m.withoutProof, ",")
	if len(fields) < 2 {
		return m, errors.New("client-final message: want c= and r=")
	}
	c, ok := strings.CutPrefix(fields[0], "c=")
	if !ok {
		return m, fmt.Errorf("client-final message: want c=, got %q", fields[0])
	}
	if m.channelBinding, err = base64.StdEncoding.Strict().DecodeString(c); err != nil {
		return m, errors.New("client-final message: channel binding is not base64")
	}
	if m.nonce, ok = strings.CutPrefix(fields[1], "r="); !ok {
		return m, fmt.Errorf("client-final message: want r=, got %q", fields[1])
	}
	if err := checkNonce(m.nonce); err != nil {
		return m, fmt.Errorf("client-final message: %w", err)
	}
	for _, ext := range fields[2:] {
		k, _, ok := strings.Cut(ext, "=")
		if !ok || !validExtensionName(k) {
			return m, fmt.Errorf("client-final message: invalid extension %q", ext)
		}
	}
	return m, nil
}

// checkNonce checks RFC 5802's printable: %x21-2B / %x2D-7E.
func checkNonce(n string) error {
	if n == "" {
		return errors.New("empty nonce")
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return fmt.Errorf("nonce has invalid byte %#x", c)
		}
	}
	return nil
}

func validExtensionName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// scramUnescape decodes a saslname: "=2C" is ',', "=3D" is '=', and any
// other '=' or a ',' is an error. The result must be UTF-8.
func scramUnescape(s string) (string, error) {
	if !strings.ContainsAny(s, "=,") {
		return checkUTF8(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ',':
			return "", errors.New("unescaped ','")
		case '=':
			switch {
			case strings.HasPrefix(s[i:], "=2C"):
				b.WriteByte(',')
			case strings.HasPrefix(s[i:], "=3D"):
				b.WriteByte('=')
			default:
				return "", errors.New("invalid '=' escape")
			}
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return checkUTF8(b.String())
}
