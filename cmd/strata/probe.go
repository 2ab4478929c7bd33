package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/strata-broker/strata/broker"
)

// defaultProbeURL is the readiness endpoint of a broker with the default
// metrics.listener.
const defaultProbeURL = "http://127.0.0.1:9644" + broker.ReadyzPath

// probeBodyMax bounds how much of a failing answer is quoted.
const probeBodyMax = 2048

// runProbe asks a broker's health endpoint once and succeeds on a 200: a
// container health check that needs no curl, e.g.
// HEALTHCHECK CMD ["/strata", "probe"]. The URL's scheme and host are the
// broker's metrics.listener; --command-config gives the TLS settings of
// an SSL one, as for strata tier.
func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", defaultProbeURL, "health endpoint to ask: .../readyz (ready) or .../healthz (alive)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	commandConfig := fs.String("command-config", "", "client properties for an SSL metrics.listener (metrics.listener.security.protocol and ssl.*)")
	quiet := fs.Bool("quiet", false, "print nothing when healthy")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	c, err := newAdminClient(*commandConfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", *url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, probeBodyMax))
	if err != nil {
		return fmt.Errorf("probe %s: read the answer: %w", *url, err)
	}
	text := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s: %s", *url, resp.Status, text)
	}
	if !*quiet {
		fmt.Fprintln(stdout, text)
	}
	return nil
}
