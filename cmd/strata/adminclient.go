package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// adminClient calls the brokers' admin endpoints on metrics.listener,
// over TLS and with credentials when --command-config says so.
type adminClient struct {
	http     *http.Client
	scheme   string // http, or https for metrics.listener.security.protocol=SSL
	bearer   string // metrics.auth.bearer.token
	user, pw string // metrics.auth.basic.username and password
}

// newAdminClient reads --command-config ("" is none) for the metrics
// endpoint: metrics.listener.security.protocol (PLAINTEXT or SSL, with
// the ssl.* keys as for Kafka listeners), and metrics.auth.bearer.token
// or metrics.auth.basic.username and password, as the broker names them.
// Other keys are ignored, so one file serves strata txn too.
func newAdminClient(path string) (*adminClient, error) {
	c := &adminClient{http: http.DefaultClient, scheme: "http"}
	if path == "" {
		return c, nil
	}
	p, err := readCommandConfig(path)
	if err != nil {
		return nil, err
	}
	if err := c.configure(p); err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return c, nil
}

// configure applies the metrics endpoint's client properties.
func (c *adminClient) configure(p map[string]string) error {
	if err := checkClientKeys(p); err != nil {
		return err
	}
	c.bearer, c.user, c.pw = p["metrics.auth.bearer.token"], p["metrics.auth.basic.username"], p["metrics.auth.basic.password"]
	if c.bearer != "" && c.user != "" {
		return errors.New("set metrics.auth.bearer.token or metrics.auth.basic.username, not both")
	}
	if (c.user == "") != (c.pw == "") {
		return errors.New("metrics.auth.basic.username and metrics.auth.basic.password must be set together")
	}
	switch proto := strings.ToUpper(p["metrics.listener.security.protocol"]); proto {
	case "", "PLAINTEXT":
	case "SSL":
		tc, err := clientTLS(p)
		if err != nil {
			return err
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			d := tls.Dialer{NetDialer: &net.Dialer{Timeout: clientDialTimeout}, Config: tc.Config(host)}
			return d.DialContext(ctx, network, addr)
		}
		c.http, c.scheme = &http.Client{Transport: tr}, "https"
	default:
		return fmt.Errorf("metrics.listener.security.protocol %q: want PLAINTEXT or SSL", p["metrics.listener.security.protocol"])
	}
	return nil
}

// call sends one request to a broker's admin endpoint and decodes the
// JSON answer into out; an error status becomes an error carrying the
// broker's message.
func (c *adminClient) call(ctx context.Context, method, addr, path string, q url.Values, body, out any) error {
	u := url.URL{Scheme: c.scheme, Host: addr, Path: path, RawQuery: q.Encode()}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u.String(), err)
	}
	req.Header.Set("Content-Type", "application/json")
	switch {
	case c.bearer != "":
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	case c.user != "":
		req.SetBasicAuth(c.user, c.pw)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("broker admin %s (metrics.listener): %w", addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("broker admin %s: read answer: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return fmt.Errorf("broker admin %s: %s: %s", addr, resp.Status, e.Error)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("broker admin %s: decode answer: %w", addr, err)
	}
	return nil
}
