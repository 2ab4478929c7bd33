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
	"time"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/wire"
)

// maxInFlight bounds the requests of one connection that are read but not
// yet answered.
const maxInFlight = 64

// pending is one request's place in a connection's response order.
type pending struct {
	done  chan struct{}
	frame *wire.Frame // nil: no response (acks=0)
	err   error       // set: close the connection
}

// serveConn serves one client connection until it closes or ctx is done.
func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	log := s.log.With("remote", c.RemoteAddr().String())
	queue := make(chan *pending, maxInFlight)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeLoop(c, queue, cancel, log)
	}()
	go func() {
		<-ctx.Done()
		_ = c.Close()
	}()

	br := bufio.NewReaderSize(c, 64<<10)
	// spare is a frame buffer free for reuse: only a produce request's
	// frame is, once its handler returned (records appended; kmsg decodes
	// byte fields as views of the frame but copies strings), even when an
	// acks=all continuation (Result.Later) still waits: that works on the
	// response only, never on the request's bytes.
	var spare []byte
loop:
	for {
		frame, err := wire.ReadFrame(br, s.cfg.SocketRequestMaxBytes, spare)
		spare = nil
		if err != nil {
			switch {
			case errors.Is(err, wire.ErrFrameTooLarge), errors.Is(err, wire.ErrMalformed):
				log.Warn("closing connection: bad request frame", "err", err)
			case !errors.Is(err, io.EOF) && ctx.Err() == nil && !errors.Is(err, net.ErrClosed):
				log.Debug("connection read failed", "err", err)
			}
			break
		}
		p := &pending{done: make(chan struct{})}
		select {
		case queue <- p:
		case <-ctx.Done():
			break loop
		}
		async, inline := s.dispatch(ctx, frame, p, log)
		if !async && p.err != nil {
			break
		}
		if inline && frame[0] == 0 && frame[1] == 0 { // api key 0: Produce
			spare = frame
		}
	}
	close(queue)
	<-writerDone
	cancel()
}

// writeLoop writes responses in request order; on the first failure it
// closes the connection and drops the rest.
func (s *Server) writeLoop(c net.Conn, queue <-chan *pending, cancel context.CancelFunc, log *slog.Logger) {
	failed := false
	for p := range queue {
		<-p.done
		if failed {
			if p.frame != nil {
				p.frame.Release()
			}
			continue
		}
		if p.err != nil {
			log.Warn("closing connection", "err", p.err)
			failed = true
			cancel()
			continue
		}
		if p.frame == nil {
			continue
		}
		if err := wire.WriteFrame(c, p.frame); err != nil {
			failed = true
			cancel()
		}
	}
}

// dispatch decodes a frame and runs its handler, inline or (for async APIs)
// on its own goroutine. It reports whether the request goes on off this
// goroutine (async) and whether its handler ran on it (inline; true also
// when a Later continuation goes on elsewhere).
func (s *Server) dispatch(ctx context.Context, frame []byte, p *pending, log *slog.Logger) (async, inline bool) {
	start := time.Now()
	h, body, err := wire.ParseHeader(frame)
	if err != nil {
		p.err = err
		close(p.done)
		return false, false
	}
	if h.Key == 18 && !handler.Supported(h.Key, h.Version) {
		p.frame, p.err = wire.EncodeResponse(h.CorrelationID, handler.UnsupportedApiVersions(), nil, nil)
		close(p.done)
		return false, false
	}
	api, ok := handler.Lookup(h.Key)
	if !ok || !handler.Supported(h.Key, h.Version) {
		p.err = fmt.Errorf("unsupported api key %d version %d (client %q)", h.Key, h.Version, h.ClientID)
		close(p.done)
		return false, false
	}
	req, err := wire.DecodeBody(h, body)
	if err != nil {
		p.err = err
		close(p.done)
		return false, false
	}
	hreq := &handler.Request{Header: h, Body: req, Bytes: len(frame) + 4}
	finish := func(res handler.Result, err error) {
		p.frame, p.err = s.encode(hreq, res, err)
		s.env.Metrics.Observe(h.Key, time.Since(start), p.err != nil)
		close(p.done)
	}
	if api.Async {
		go func() { finish(s.run(ctx, api, hreq, log)) }()
		return true, false
	}
	res, err := s.run(ctx, api, hreq, log)
	if err == nil && res.Later != nil {
		// The request goes on off this goroutine; later requests of the
		// connection are read (and their responses queued) meanwhile.
		go func() {
			res, err := s.later(ctx, api, hreq, res.Later, log)
			finish(res, err)
		}()
		return true, true
	}
	finish(res, err)
	return false, true
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
