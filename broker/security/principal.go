package security

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf16"
)

// Anonymous is the principal of a connection without a client
// certificate (and of every connection of a PLAINTEXT listener).
const Anonymous = "User:ANONYMOUS"

// attributeKeywords are the attribute types Java's X500Principal names
// in RFC 2253 form; any other is written as its OID with a #hex value.
var attributeKeywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O",
	"2.5.4.11": "OU", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}

type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one relative distinguished name (a SET, by the type name's
// suffix, for encoding/asn1).
type rdnSET []attributeTypeAndValue

// SubjectDN is a certificate's subject in RFC 2253 form as Java's
// X500Principal.getName() writes it, which ssl.principal.mapping.rules
// match: most specific first ("CN=alice,OU=eng,O=Acme,C=US"), the values
// of a multi-valued RDN joined by +, known attributes by keyword and
// others by OID with their DER value in hex.
func SubjectDN(c *x509.Certificate) (string, error) {
	var seq []rdnSET
	if rest, err := asn1.Unmarshal(c.RawSubject, &seq); err != nil || len(rest) > 0 {
		return "", fmt.Errorf("parse certificate subject: %v", err)
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i < len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			kw, known := attributeKeywords[atv.Type.String()]
			s, isString := stringValue(atv.Value)
			if !known || !isString {
				name := kw
				if !known {
					name = atv.Type.String()
				}
				b.WriteString(name + "=#" + hex.EncodeToString(atv.Value.FullBytes))
				continue
			}
			b.WriteString(kw + "=" + escapeDNValue(s))
		}
	}
	return b.String(), nil
}

// stringValue decodes a directory string (UTF8String, PrintableString,
// TeletexString, IA5String, UniversalString, BMPString).
func stringValue(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagT61String, asn1.TagIA5String:
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	case 28: // UniversalString, UTF-32BE
		if len(v.Bytes)%4 != 0 {
			return "", false
		}
		var b strings.Builder
		for i := 0; i < len(v.Bytes); i += 4 {
			b.WriteRune(rune(v.Bytes[i])<<24 | rune(v.Bytes[i+1])<<16 | rune(v.Bytes[i+2])<<8 | rune(v.Bytes[i+3]))
		}
		return b.String(), true
	}
	return "", false
}

// escapeDNValue escapes an attribute value as RFC 2253 asks: , + " \ < > ;
// anywhere, # and a space leading, a space trailing.
func escapeDNValue(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case strings.ContainsRune(`,+"\<>;`, r),
			i == 0 && (r == '#' || r == ' '),
			i == len(s)-1 && r == ' ':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
