package broker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/wire"
)

// connDrainTimeout bounds how long a connection of a stopping broker may
// take to answer the requests it already read.
const connDrainTimeout = 2 * time.Second

// freshConnGrace is how long a draining connection that has not yet read
// a request other than ApiVersions waits for one: a client that just
// opened it has its first request on the way.
const freshConnGrace = 250 * time.Millisecond

// serveConn serves one client connection until it closes or serving is
// done. When serving ends the connection drains: it stops reading
// requests, answers those it read (their handlers' context stays live for
// up to connDrainTimeout), and closes. A connection that has not yet read
// a request other than ApiVersions first waits freshConnGrace for one and
// answers it. A client so sees a close only on a connection that has
// answered before, and retries what it had sent on it; a close before a
// connection's first answer reads to some clients (franz-go) as a SASL or
// TLS mismatch, which they do not retry.
func (s *Server) serveConn(serving context.Context, c net.Conn) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(serving))
	log := s.log.With("remote", c.RemoteAddr().String())
	resp := newResponder(c, cancel, log)
	var served atomic.Bool // a request other than ApiVersions was read
	stopDrain := context.AfterFunc(serving, func() {
		stopReading := time.Now()
		if !served.Load() {
			stopReading = stopReading.Add(freshConnGrace)
		}
		_ = c.SetReadDeadline(stopReading)
		t := time.AfterFunc(connDrainTimeout, func() {
			log.Warn("closing connection: requests still running after the drain timeout", "timeout", connDrainTimeout)
			cancel()
		})
		context.AfterFunc(ctx, func() { t.Stop() })
	})
	defer stopDrain()
	go func() {
		<-ctx.Done()
		_ = c.Close()
	}()

	br := bufio.NewReaderSize(c, 64<<10)
	// spare is a frame buffer free for reuse: the frame of a request whose
	// handler ran here and whose table row says it releases the frame
	// (handler.API.ReleasesFrame).
	var spare []byte
	for {
		frame, err := wire.ReadFrame(br, s.cfg.SocketRequestMaxBytes, spare)
		spare = nil
		if err != nil {
			switch {
			case errors.Is(err, wire.ErrFrameTooLarge), errors.Is(err, wire.ErrMalformed):
				log.Warn("closing connection: bad request frame", "err", err)
			case !errors.Is(err, io.EOF) && ctx.Err() == nil && serving.Err() == nil && !errors.Is(err, net.ErrClosed):
				log.Debug("connection read failed", "err", err)
			}
			break
		}
		p, ok := resp.add(ctx)
		if !ok {
			break
		}
		key, async, released := s.dispatch(ctx, frame, resp, p, log)
		if !async && p.err != nil {
			break
		}
		if released {
			spare = frame
		}
		if key != kmsg.ApiVersions.Int16() {
			served.Store(true)
			if serving.Err() != nil {
				break // draining: this was the request a fresh connection waited for
			}
		}
	}
	resp.wait()
	cancel()
}

// dispatch decodes a frame and runs its handler, inline or (for async APIs)
// on its own goroutine. It reports the request's API key, whether the
// request goes on off this goroutine (async; also when only a Later
// continuation does), and whether frame is free for the next request: its
// handler ran on this goroutine and its table row says it releases the
// frame.
func (s *Server) dispatch(ctx context.Context, frame []byte, resp *responder, p *pending, log *slog.Logger) (key int16, async, released bool) {
	start := time.Now()
	h, body, err := wire.ParseHeader(frame)
	if err != nil {
		p.err = err
		resp.complete(p)
		return h.Key, false, false
	}
	if h.Key == kmsg.ApiVersions.Int16() && !handler.Supported(h.Key, h.Version) {
		p.frame, p.err = wire.EncodeResponse(h.CorrelationID, handler.UnsupportedApiVersions(), nil, nil)
		resp.complete(p)
		return h.Key, false, false
	}
	api, ok := handler.Lookup(h.Key)
	if !ok || !handler.Supported(h.Key, h.Version) {
		p.err = fmt.Errorf("unsupported api key %d version %d (client %q)", h.Key, h.Version, h.ClientID)
		resp.complete(p)
		return h.Key, false, false
	}
	req, err := wire.DecodeBody(h, body)
	if err != nil {
		p.err = err
		resp.complete(p)
		return h.Key, false, false
	}
	hreq := &handler.Request{Header: h, Body: req, Bytes: len(frame) + 4}
	s.env.Metrics.Start(h.Key)
	finish := func(res handler.Result, err error) {
		p.frame, p.err = s.encode(hreq, res, err)
		s.env.Metrics.Observe(h.Key, time.Since(start), p.err != nil)
		resp.complete(p)
	}
	if api.Async {
		go func() { finish(s.run(ctx, api, hreq, log)) }()
		return h.Key, true, false
	}
	res, err := s.run(ctx, api, hreq, log)
	if err == nil && res.Later != nil {
		// The request goes on off this goroutine; later requests of the
		// connection are read (and their responses queued) meanwhile.
		go func() {
			res, err := s.later(ctx, api, hreq, res.Later, log)
			finish(res, err)
		}()
		return h.Key, true, api.ReleasesFrame
	}
	finish(res, err)
	return h.Key, false, api.ReleasesFrame
}

// later runs a handler's continuation, with the same panic protection.
func (s *Server) later(ctx context.Context, api handler.API, req *handler.Request, fn func(context.Context) handler.Result, log *slog.Logger) (res handler.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("handler panic", "api", api.Key, "version", req.Header.Version, "panic", r, "stack", string(debug.Stack()))
			res, err = handler.Result{}, fmt.Errorf("handler for api %d panicked: %v", api.Key, r)
		}
	}()
	return fn(ctx), nil
}

// run calls a handler, turning a panic into an error that closes only this
// connection.
func (s *Server) run(ctx context.Context, api handler.API, req *handler.Request, log *slog.Logger) (res handler.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("handler panic", "api", api.Key, "version", req.Header.Version, "panic", r, "stack", string(debug.Stack()))
			res, err = handler.Result{}, fmt.Errorf("handler for api %d panicked: %v", api.Key, r)
		}
	}()
	res, err = api.Fn(ctx, s.env, req)
	if err != nil {
		return res, fmt.Errorf("api %d v%d: %w", api.Key, req.Header.Version, err)
	}
	return res, nil
}

// encode turns a handler's result into a response frame (nil: none).
func (s *Server) encode(req *handler.Request, res handler.Result, err error) (*wire.Frame, error) {
	if err != nil || res.Resp == nil {
		for _, r := range res.Regions {
			r.Release()
		}
		return nil, err
	}
	f, err := wire.EncodeResponse(req.Header.CorrelationID, res.Resp, res.Marker, res.Regions)
	if err != nil {
		for _, r := range res.Regions {
			r.Release()
		}
		return nil, err
	}
	return f, nil
}
