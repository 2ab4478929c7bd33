package broker

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/strata-broker/strata/broker/console"
	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/metadata"
)

// listenConsole binds console.listener ("" leaves the console off). A
// broker whose SASL listeners enable no SCRAM mechanism leaves it off
// too, with an error in the log: the console checks logins against the
// SCRAM credentials only, and must not serve such a cluster to
// anonymous visitors.
func (s *Server) listenConsole(n *node) error {
	if s.cfg.ConsoleListener == "" {
		return nil
	}
	if login, ok := s.consoleLogin(); !ok {
		s.log.Error("console off: a SASL listener is configured but no SCRAM mechanism is enabled, and the console logs users in with SCRAM credentials only",
			"console.listener", s.cfg.ConsoleListener)
		return nil
	} else if login {
		s.log.Info("console asks for a SCRAM login")
	}
	ln, err := net.Listen("tcp", s.cfg.ConsoleListener)
	if err != nil {
		return fmt.Errorf("listen for the console on %s: %w", s.cfg.ConsoleListener, err)
	}
	n.consoleLn = ln
	s.mu.Lock()
	s.consoleAddr = ln.Addr().String()
	s.mu.Unlock()
	return nil
}

// ConsoleAddr is the address the web console listens on ("" when it is
// off or before Run bound it).
func (s *Server) ConsoleAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consoleAddr
}

// consoleLogin reports whether the console asks for a login (a listener
// authenticates with SASL), and whether it can (a SASL listener enables
// SCRAM).
func (s *Server) consoleLogin() (login, ok bool) {
	for _, l := range s.cfg.KafkaListeners {
		if !l.SASL() {
			continue
		}
		login = true
		for _, m := range s.cfg.SASLFor(l.Name).EnabledMechanisms {
			if strings.HasPrefix(m, "SCRAM-") {
				return true, true
			}
		}
	}
	return login, !login
}

// serveConsole serves the web console until ctx ends.
func (s *Server) serveConsole(ctx context.Context, n *node) {
	if n.consoleLn == nil {
		return
	}
	login, _ := s.consoleLogin() // listenConsole bound it: it can
	c, err := console.New(console.Options{
		Env:      func() *handler.Env { return n.env.Load() },
		ReadOnly: s.cfg.ConsoleReadOnly,
		Login:    login,
		Etcd:     func(ctx context.Context) []metadata.EndpointHealth { return etcdHealth(ctx, n) },
		Log:      s.log,
	})
	if err != nil {
		s.log.Error("console", "err", err)
		return
	}
	s.log.Info("console serving", "addr", n.consoleLn.Addr().String(), "read_only", s.cfg.ConsoleReadOnly)
	s.serveHTTP(ctx, n.consoleLn, c, "console server")
	c.Close()
}

// etcdHealth is the health of the metadata store's etcd endpoints, as
// the broker's own etcd client reaches them.
func etcdHealth(ctx context.Context, n *node) []metadata.EndpointHealth {
	hr, ok := n.store.(metadata.HealthReporter)
	if !ok {
		return nil
	}
	return hr.Health(ctx)
}
