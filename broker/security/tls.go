package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/strata-broker/strata/config"
)

// materials are a listener's key store (nil: none) and trust store (nil:
// none), reloading from their files.
type materials struct {
	cert  *reloading[*tls.Certificate]
	roots *reloading[*x509.CertPool]
	cfg   config.SSL
}

// loadMaterials checks a listener's ssl.* keys as Kafka's
// DefaultSslEngineFactory does for PEM and loads its stores.
func loadMaterials(listener string, s config.SSL, log *slog.Logger) (*materials, error) {
	m := &materials{cfg: s}
	keystore := s.KeystoreLocation != "" || s.KeystoreCertificateChain != "" || s.KeystoreKey != ""
	if keystore {
		if s.KeystoreType != config.StorePEM {
			return nil, fmt.Errorf("listener %s: ssl.keystore.type %s is not supported: Strata reads PEM only (set ssl.keystore.type=PEM)", listener, s.KeystoreType)
		}
		if s.KeystorePassword != "" {
			return nil, fmt.Errorf("listener %s: ssl.keystore.password cannot be specified with PEM format, only ssl.key.password may be specified", listener)
		}
		var (
			files []string
			what  string
			read  func() (string, string, error)
		)
		switch {
		case s.KeystoreLocation != "" && (s.KeystoreCertificateChain != "" || s.KeystoreKey != ""):
			return nil, fmt.Errorf("listener %s: ssl.keystore.location cannot be specified with ssl.keystore.certificate.chain or ssl.keystore.key", listener)
		case s.KeystoreLocation != "":
			files, what = []string{s.KeystoreLocation}, "ssl.keystore.location "+s.KeystoreLocation
			read = func() (string, string, error) {
				b, err := os.ReadFile(s.KeystoreLocation)
				return string(b), string(b), err
			}
		case s.KeystoreCertificateChain == "" || s.KeystoreKey == "":
			return nil, fmt.Errorf("listener %s: ssl.keystore.certificate.chain and ssl.keystore.key must be specified together", listener)
		default:
			what = "ssl.keystore.certificate.chain"
			read = func() (string, string, error) { return s.KeystoreCertificateChain, s.KeystoreKey, nil }
		}
		load := func() (*tls.Certificate, error) {
			chainText, keyText, err := read()
			if err != nil {
				return nil, err
			}
			chain, err := parseCertificates(chainText)
			if err != nil {
				return nil, fmt.Errorf("key store certificate chain: %w", err)
			}
			key, err := parseKey(keyText, s.KeyPassword)
			if err != nil {
				return nil, fmt.Errorf("key store: %w", err)
			}
			c, err := keyPair(chain, key)
			return &c, err
		}
		var err error
		if m.cert, err = newReloading(what, files, load, log); err != nil {
			return nil, fmt.Errorf("listener %s: %s: %w", listener, what, err)
		}
	}
	if s.TruststoreLocation != "" || s.TruststoreCertificates != "" {
		if s.TruststoreType != config.StorePEM {
			return nil, fmt.Errorf("listener %s: ssl.truststore.type %s is not supported: Strata reads PEM only (set ssl.truststore.type=PEM)", listener, s.TruststoreType)
		}
		if s.TruststorePassword != "" {
			return nil, fmt.Errorf("listener %s: ssl.truststore.password cannot be specified for PEM format", listener)
		}
		if s.TruststoreLocation != "" && s.TruststoreCertificates != "" {
			return nil, fmt.Errorf("listener %s: ssl.truststore.location cannot be specified with ssl.truststore.certificates", listener)
		}
		what, files := "ssl.truststore.certificates", []string(nil)
		if s.TruststoreLocation != "" {
			what, files = "ssl.truststore.location "+s.TruststoreLocation, []string{s.TruststoreLocation}
		}
		load := func() (*x509.CertPool, error) {
			text := s.TruststoreCertificates
			if s.TruststoreLocation != "" {
				b, err := os.ReadFile(s.TruststoreLocation)
				if err != nil {
					return nil, err
				}
				text = string(b)
			}
			certs, err := parseCertificates(text)
			if err != nil {
				return nil, err
			}
			pool := x509.NewCertPool()
			for _, c := range certs {
				pool.AddCert(c)
			}
			return pool, nil
		}
		var err error
		if m.roots, err = newReloading(what, files, load, log); err != nil {
			return nil, fmt.Errorf("listener %s: %s: %w", listener, what, err)
		}
	}
	return m, nil
}

// base is the tls.Config part common to both sides: versions and cipher
// suites.
func (m *materials) base() *tls.Config {
	c := &tls.Config{}
	for _, p := range m.cfg.EnabledProtocols {
		v := config.TLSVersions[p]
		if c.MinVersion == 0 || v < c.MinVersion {
			c.MinVersion = v
		}
		c.MaxVersion = max(c.MaxVersion, v)
	}
	for _, name := range m.cfg.CipherSuites {
		if id, tls13, ok := config.CipherSuite(name); ok && !tls13 {
			c.CipherSuites = append(c.CipherSuites, id)
		}
	}
	return c
}

func (m *materials) pool() *x509.CertPool {
	if m.roots == nil {
		return nil
	}
	return m.roots.get()
}

// Server is the TLS server side of one SSL listener.
type Server struct {
	listener string
	m        *materials
	rules    *config.PrincipalRules
}

// NewServer checks and loads the TLS settings of an SSL listener: it
// needs a key store; ssl.client.auth requested or required verifies
// client certificates against its trust store.
func NewServer(listener string, s config.SSL, log *slog.Logger) (*Server, error) {
	m, err := loadMaterials(listener, s, log)
	if err != nil {
		return nil, err
	}
	if m.cert == nil {
		return nil, fmt.Errorf("listener %s: an SSL listener needs a key store: set ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key (ssl.keystore.type=PEM)", listener)
	}
	rules, err := config.ParsePrincipalRules(s.PrincipalMappingRules)
	if err != nil {
		return nil, fmt.Errorf("listener %s: ssl.principal.mapping.rules: %w", listener, err)
	}
	return &Server{listener: listener, m: m, rules: rules}, nil
}

// Config returns the listener's tls.Config: each handshake takes the
// current key store and trust store (GetConfigForClient).
func (s *Server) Config() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := s.m.base()
		c.Certificates = []tls.Certificate{*s.m.cert.get()}
		c.ClientCAs = s.m.pool()
		if c.ClientCAs == nil {
			c.ClientCAs = x509.NewCertPool() // no trust store: no client certificate is trusted
		}
		switch s.m.cfg.ClientAuth {
		case "required":
			c.ClientAuth = tls.RequireAndVerifyClientCert
		case "requested":
			c.ClientAuth = tls.VerifyClientCertIfGiven
		}
		return c, nil
	}}
}

// Principal names the client of a completed handshake: User: and its
// certificate's subject mapped by ssl.principal.mapping.rules, or
// Anonymous without a certificate. A subject no rule maps is an error
// (Kafka fails the authentication).
func (s *Server) Principal(st tls.ConnectionState) (string, error) {
	if len(st.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	dn, err := SubjectDN(st.PeerCertificates[0])
	if err != nil {
		return "", err
	}
	name, err := s.rules.Name(dn)
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}

// Client is the TLS client side of inter-broker connections: the
// inter-broker listener's key store (its certificate, for brokers that
// ask for one) and trust store (nil: the system roots).
type Client struct{ m *materials }

// NewClient checks and loads the inter-broker listener's TLS settings.
func NewClient(listener string, s config.SSL, log *slog.Logger) (*Client, error) {
	m, err := loadMaterials(listener, s, log)
	if err != nil {
		return nil, err
	}
	return &Client{m: m}, nil
}

// Config returns the tls.Config to dial a broker at host. With
// ssl.endpoint.identification.algorithm=https the broker's certificate
// must name host; with it empty only its chain is verified.
func (c *Client) Config(host string) *tls.Config {
	cfg := c.m.base()
	cfg.ServerName = host
	cfg.RootCAs = c.m.pool()
	if c.m.cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c.m.cert.get(), nil }
	}
	if c.m.cfg.EndpointIdentificationAlgorithm == "" {
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true // the chain is still verified, below, without the host name
		cfg.VerifyConnection = func(st tls.ConnectionState) error {
			if len(st.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, ic := range st.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := st.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg
}
