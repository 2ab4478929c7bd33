package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/strata-broker/strata/broker/console"
	"github.com/strata-broker/strata/broker/handler"
)

// listenConsole binds console.listener ("" leaves the console off).
func (s *Server) listenConsole(n *node) error {
	if s.cfg.ConsoleListener == "" {
		return nil
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

// consoleLogin reports whether the console asks for a login: when a
// listener authenticates with SASL and SCRAM is enabled.
func (s *Server) consoleLogin() bool {
	for _, l := range s.cfg.KafkaListeners {
		if !l.SASL() {
			continue
		}
		for _, m := range s.cfg.SASLFor(l.Name).EnabledMechanisms {
			if strings.HasPrefix(m, "SCRAM-") {
				return true
			}
		}
	}
	return false
}

// serveConsole serves the web console until ctx ends.
func (s *Server) serveConsole(ctx context.Context, n *node) {
	if n.consoleLn == nil {
		return
	}
	c, err := console.New(console.Options{
		Env:      func() *handler.Env { return n.env.Load() },
		ReadOnly: s.cfg.ConsoleReadOnly,
		Login:    s.consoleLogin(),
		Tier:     func(topic string) []console.TierRow { return consoleTier(n, topic) },
		Etcd:     func(ctx context.Context) []console.EtcdEndpoint { return etcdHealth(ctx, n.endpoints) },
		Log:      s.log,
	})
	if err != nil {
		s.log.Error("console", "err", err)
		return
	}
	reqCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return reqCtx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(n.consoleLn) }()
	s.log.Info("console serving", "addr", n.consoleLn.Addr().String(), "read_only", s.cfg.ConsoleReadOnly)
	select {
	case <-ctx.Done():
	case err := <-served:
		s.log.Error("console server", "err", err)
		served = nil
	}
	cancelRequests() // ends live tails
	sctx, cancel := context.WithTimeout(context.Background(), metricsStopTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if served != nil {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("console server", "err", err)
		}
	}
}

// consoleTier is the tier state of this broker's replicas of topic
// ("": all), as /v1/tier/status reports it.
func consoleTier(n *node, topic string) []console.TierRow {
	if n.parts == nil {
		return nil
	}
	var out []console.TierRow
	for _, p := range n.parts.All() {
		if topic != "" && p.Topic != topic {
			continue
		}
		l := p.Log()
		r := console.TierRow{Topic: p.Topic, Partition: p.Index, Tiered: p.Config().RemoteStorageEnable,
			LocalStart: l.LogStartOffset(), RemoteStart: -1, RemoteEnd: -1}
		for _, sg := range l.Segments() {
			r.LocalBytes += sg.Size
		}
		if n.tier != nil && n.tier.m != nil {
			st := n.tier.m.StatusOf(p.RemoteInfo())
			r.RemoteStart, r.RemoteEnd, r.RemoteBytes = st.RemoteStart, st.RemoteEnd, st.RemoteBytes
			r.CopyLagSegments, r.CopyLagBytes, r.LastError = st.CopyBacklog, st.CopyBacklogBytes, st.LastError
		}
		out = append(out, r)
	}
	return out
}

// etcdHealth asks each etcd endpoint's /health, in parallel.
func etcdHealth(ctx context.Context, endpoints []string) []console.EtcdEndpoint {
	out := make([]console.EtcdEndpoint, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		out[i].Endpoint = ep
		wg.Go(func() {
			u := ep
			if !strings.Contains(u, "://") {
				u = "http://" + u
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u, "/")+"/health", nil)
			if err != nil {
				out[i].Err = err.Error()
				return
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				out[i].Err = err.Error()
				return
			}
			_ = res.Body.Close()
			out[i].Healthy = res.StatusCode == http.StatusOK
			if !out[i].Healthy {
				out[i].Err = res.Status
			}
		})
	}
	wg.Wait()
	return out
}
