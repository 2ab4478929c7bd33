package security

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/pbkdf2"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"strings"
)

// pemBlock is one -----BEGIN type----- ... -----END type----- block.
type pemBlock struct {
	typ   string
	bytes []byte
}

// pemBlocks matches PEM blocks leniently, as Kafka's PemParser does: the
// base64 between the lines may be broken anywhere or not at all, so that
// a PEM value given inline in a properties file on one line (or continued
// with backslashes, which drop the line breaks) parses.
var pemBlocks = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----([^-]*)-----END ([A-Z0-9 ]+)-----`)

func parsePEM(text string) ([]pemBlock, error) {
	var out []pemBlock
	for _, m := range pemBlocks.FindAllStringSubmatch(text, -1) {
		if m[1] != m[3] {
			return nil, fmt.Errorf("PEM block BEGIN %s ends with END %s", m[1], m[3])
		}
		body := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\\' {
				return -1
			}
			return r
		}, m[2])
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, fmt.Errorf("PEM block %s: %w", m[1], err)
		}
		out = append(out, pemBlock{m[1], b})
	}
	return out, nil
}

// parseCertificates returns every CERTIFICATE block of text, in order.
func parseCertificates(text string) ([]*x509.Certificate, error) {
	blocks, err := parsePEM(text)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, b := range blocks {
		if b.typ != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

// parseKey returns the one private key of text: PKCS#8 (PRIVATE KEY),
// encrypted PKCS#8 (ENCRYPTED PRIVATE KEY, with password), PKCS#1 (RSA
// PRIVATE KEY) or SEC 1 (EC PRIVATE KEY).
func parseKey(text, password string) (crypto.PrivateKey, error) {
	blocks, err := parsePEM(text)
	if err != nil {
		return nil, err
	}
	var keys []crypto.PrivateKey
	for _, b := range blocks {
		var k crypto.PrivateKey
		switch b.typ {
		case "PRIVATE KEY":
			if password != "" {
				return nil, errors.New("ssl.key.password is set but the private key is not encrypted")
			}
			k, err = x509.ParsePKCS8PrivateKey(b.bytes)
		case "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, errors.New("the private key is encrypted: set ssl.key.password")
			}
			k, err = decryptPKCS8(b.bytes, password)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(b.bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		keys = append(keys, k)
	}
	if len(keys) != 1 {
		return nil, fmt.Errorf("want exactly one PEM private key, found %d", len(keys))
	}
	return keys[0], nil
}

// keyPair builds a certificate from its chain and key and checks that
// they match.
func keyPair(chain []*x509.Certificate, key crypto.PrivateKey) (tls.Certificate, error) {
	c := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, x := range chain {
		c.Certificate = append(c.Certificate, x.Raw)
	}
	pub, ok := key.(interface{ Public() crypto.PublicKey })
	if !ok {
		return c, fmt.Errorf("unsupported private key type %T", key)
	}
	eq, ok := pub.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !eq.Equal(chain[0].PublicKey) {
		return c, errors.New("the private key does not match the first certificate of the chain")
	}
	switch key.(type) {
	case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
	default:
		return c, fmt.Errorf("unsupported private key type %T", key)
	}
	return c, nil
}

// OIDs of PKCS#5 v2 (RFC 8018) and the ciphers it names.
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                      `asn1:"optional"`
	PRF            pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 decrypts an encrypted PKCS#8 key (PBES2 with PBKDF2 and
// AES-CBC or 3DES-CBC, what openssl pkcs8 -topk8 and Java write) and
// parses it. The standard library has no such function.
func decryptPKCS8(der []byte, password string) (crypto.PrivateKey, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: %w", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted PKCS#8: unsupported scheme %v (want PBES2)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted PKCS#8: unsupported key derivation %v (want PBKDF2)", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: PBKDF2 parameters: %w", err)
	}
	var prf func() hash.Hash
	switch alg := kdf.PRF.Algorithm; {
	case len(alg) == 0, alg.Equal(oidHMACSHA1):
		prf = sha1.New
	case alg.Equal(oidHMACSHA224):
		prf = sha256.New224
	case alg.Equal(oidHMACSHA256):
		prf = sha256.New
	case alg.Equal(oidHMACSHA384):
		prf = sha512.New384
	case alg.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("encrypted PKCS#8: unsupported PBKDF2 PRF %v", alg)
	}
	var (
		keyLen   int
		newBlock func([]byte) (cipher.Block, error)
	)
	switch alg := params.EncryptionScheme.Algorithm; {
	case alg.Equal(oidAES128CBC):
		keyLen, newBlock = 16, aes.NewCipher
	case alg.Equal(oidAES192CBC):
		keyLen, newBlock = 24, aes.NewCipher
	case alg.Equal(oidAES256CBC):
		keyLen, newBlock = 32, aes.NewCipher
	case alg.Equal(oidDESEDE3CBC):
		keyLen, newBlock = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("encrypted PKCS#8: unsupported cipher %v (want AES-CBC or DES-EDE3-CBC)", alg)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: cipher IV: %w", err)
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.IterationCount, keyLen)
	if err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: %w", err)
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, err
	}
	data := info.EncryptedData
	if len(iv) != block.BlockSize() || len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, errors.New("encrypted PKCS#8: malformed ciphertext")
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > block.BlockSize() || pad > len(plain) {
		return nil, errors.New("encrypted PKCS#8: wrong ssl.key.password (bad padding)")
	}
	k, err := x509.ParsePKCS8PrivateKey(plain[:len(plain)-pad])
	if err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: wrong ssl.key.password? %w", err)
	}
	return k, nil
}
