package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/security"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/internal/benchhook"
)

// connDrainTimeout bounds how long a connection of a stopping broker may
// take to answer the requests it already read.
const connDrainTimeout = 2 * time.Second

// freshConnGrace is how long a draining connection that has not yet read
// a request other than ApiVersions waits for one: a client that just
// opened it has its first request on the way.
const freshConnGrace = 250 * time.Millisecond

// errIdle ends a connection idle for connections.max.idle.ms.
var errIdle = errors.New("idle for connections.max.idle.ms")

// serveConn serves one client connection until it closes, idles for
// connections.max.idle.ms, or serving is done. When serving ends the
// connection drains: it stops reading requests, answers those it read
// (their handlers' context stays live for up to connDrainTimeout), and
// closes. A connection that has not yet read a request other than
// ApiVersions first waits freshConnGrace for one and answers it. A client
// so sees a close only on a connection that has answered before, and
// retries what it had sent on it; a close before a connection's first
// answer reads to some clients (franz-go) as a SASL or TLS mismatch,
// which they do not retry.
//
// A request frame must arrive whole within connections.max.idle.ms of its
// first byte (awaitRequest), and a response be taken by the client within
// it (at least half of it, responder.write); a request's bytes count in
// queued.max.request.bytes from their reading until its handler is done
// with them (dispatch). A response throttled by a client quota mutes the
// connection (KIP-219): the next request read waits out the throttle
// before it is handled (connMute).
func (s *Server) serveConn(serving context.Context, c net.Conn, cl *clients, kl *kafkaListener) {
	addr := remoteAddr(c)
	defer cl.quotas.release(addr)
	conn := &handler.Conn{Listener: kl.cfg.Name, Principal: security.Anonymous, Host: addr}
	if kl.tls != nil {
		tc, principal, err := handshake(serving, c, kl.tls, cl.idle)
		if err != nil {
			// As Kafka logs a failed SSL handshake: the client's address
			// and why (a warning, so that the shared rate limit bounds
			// what hostile clients can log). A client that went away
			// (a port probe, a stopping broker's fetcher) or a broker
			// that stops serving is no failure: debug level.
			lvl := slog.LevelWarn
			if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || serving.Err() != nil {
				lvl = slog.LevelDebug
			}
			cl.log.Log(serving, lvl, "closing connection: TLS handshake failed", "listener", kl.cfg.Name, "remote", c.RemoteAddr().String(), "err", err)
			_ = c.Close()
			return
		}
		c, conn.Principal = tc, principal
	}
	if kl.sasl != nil {
		conn.SASL = s.newAuth(kl.sasl, kl.cfg.Name, cl.log.With("remote", c.RemoteAddr().String()))
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(serving))
	// reading ends with the connection or when serving ends: a read
	// paused at queued.max.request.bytes then gives up.
	reading, stopReading := context.WithCancel(ctx)
	log := cl.log.With("remote", c.RemoteAddr().String())
	resp := newResponder(c, cancel, log)
	if cl.idle > 0 {
		resp.writeTimeout = cl.idle
	}
	dl := &readDeadline{c: c}
	var served atomic.Bool // a request other than ApiVersions was read
	stopDrain := context.AfterFunc(serving, func() {
		stopReading()
		stop := time.Now()
		if !served.Load() {
			stop = stop.Add(freshConnGrace)
		}
		dl.drain(stop)
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
	budget := &connBudget{mem: cl.mem, ctx: reading}
	// spare is a frame buffer free for reuse: the frame of a request whose
	// handler ran here and whose table row says it releases the frame
	// (handler.API.ReleasesFrame).
	var spare []byte
	mute := &connMute{}
	for {
		// KIP-219: nothing of a throttled client is read, so its next
		// request holds no share of queued.max.request.bytes while it
		// waits; a mute its pending response sets later is honoured
		// after the read below.
		mute.wait(reading)
		deadline, err := awaitRequest(br, dl, resp, cl.idle)
		var frame []byte
		if err == nil {
			budget.deadline = deadline
			frame, err = wire.ReadFrameWithin(br, s.cfg.SocketRequestMaxBytes, spare, budget)
		}
		spare = nil
		held := budget.take()
		if err != nil {
			cl.mem.release(held)
			stopped := ctx.Err() != nil || serving.Err() != nil || dl.draining()
			switch {
			case errors.Is(err, wire.ErrFrameTooLarge), errors.Is(err, wire.ErrMalformed):
				log.Warn("closing connection: bad request frame", "err", err)
			case errors.Is(err, errIdle):
				log.Debug("closing idle connection", "idle", cl.idle)
			case errors.Is(err, os.ErrDeadlineExceeded) && !stopped:
				log.Warn("closing connection: request frame not received whole within connections.max.idle.ms", "timeout", cl.idle)
			case !errors.Is(err, io.EOF) && !stopped && !errors.Is(err, net.ErrClosed):
				log.Debug("connection read failed", "err", err)
			}
			break
		}
		mute.wait(reading) // set by a response completed during the read
		p, ok := resp.add(ctx)
		if !ok {
			cl.mem.release(held)
			break
		}
		if conn.SASL != nil && conn.SASL.RawTokens() {
			if !rawToken(ctx, conn, frame, held, cl.mem, resp, p) {
				break
			}
			continue
		}
		key, async, released := s.dispatch(ctx, frame, held, cl.mem, resp, p, conn, mute, log)
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
	stopReading()
	resp.wait()
	cancel()
	_ = c.Close() // before release frees its place under max.connections
}

// tlsHandshakeTimeout bounds a TLS handshake when
// connections.max.idle.ms does not (negative).
const tlsHandshakeTimeout = 30 * time.Second

// handshake runs the server side of a TLS handshake on c, within idle
// (or tlsHandshakeTimeout) and until serving ends, and names the
// connection's principal from the client certificate.
func handshake(serving context.Context, c net.Conn, srv *security.Server, idle time.Duration) (net.Conn, string, error) {
	if idle <= 0 {
		idle = tlsHandshakeTimeout
	}
	ctx, cancel := context.WithTimeout(serving, idle)
	defer cancel()
	var under net.Conn = wire.NewTLSBase(c)
	if benchhook.BareTLS.Load() {
		under = c
	}
	tc := tls.Server(under, srv.Config())
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, "", err
	}
	principal, err := srv.Principal(tc.ConnectionState())
	if err != nil {
		return nil, "", fmt.Errorf("principal: %w", err)
	}
	return tc, principal, nil
}

// awaitRequest waits for the first byte of the next request and returns
// the deadline by which the request must have arrived whole, idle from
// that byte, which it sets as the read deadline. A connection is idle,
// and awaitRequest returns errIdle, when idle passed with no byte
// received, no request being answered and no response written, as Kafka
// counts idleness from a connection's last activity. A negative idle is
// no timeout (a zero deadline).
func awaitRequest(br *bufio.Reader, dl *readDeadline, resp *responder, idle time.Duration) (time.Time, error) {
	if idle < 0 {
		_, err := br.Peek(1)
		return time.Time{}, err
	}
	if n := br.Buffered(); n > 0 {
		if b, _ := br.Peek(min(n, 4)); len(b) == 4 && int64(int32(binary.BigEndian.Uint32(b)))+4 <= int64(n) {
			return time.Time{}, nil // the whole frame is here: nothing left to wait for
		}
		deadline := time.Now().Add(idle)
		dl.set(deadline)
		return deadline, nil
	}
	for {
		answered := resp.answered.Load()
		dl.set(time.Now().Add(idle))
		_, err := br.Peek(1)
		if err == nil {
			deadline := time.Now().Add(idle)
			dl.set(deadline)
			return deadline, nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || dl.draining() {
			return time.Time{}, err
		}
		if resp.unanswered() == 0 && resp.answered.Load() == answered {
			return time.Time{}, errIdle
		}
	}
}

// readDeadline is one connection's read deadline. The reading goroutine
// sets it for the idle and frame timeouts; the drain moves it earlier,
// and no later set moves it past the drain's.
type readDeadline struct {
	c    net.Conn
	mu   sync.Mutex
	stop time.Time // the drain's deadline (zero: not draining); guarded by mu
}

func (d *readDeadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.stop.IsZero() && t.After(d.stop) {
		t = d.stop
	}
	_ = d.c.SetReadDeadline(t)
}

func (d *readDeadline) drain(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stop = t
	_ = d.c.SetReadDeadline(t)
}

func (d *readDeadline) draining() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.stop.IsZero()
}

// dispatch decodes a frame and runs its handler, inline or (for async APIs)
// on its own goroutine, and gives the frame's held bytes back to mem once
// the handler (for a request that goes on in a Later continuation, its
// synchronous part) has run. It reports the request's API key, whether the
// request goes on off this goroutine (async; also when only a Later
// continuation does), and whether frame is free for the next request: its
// handler ran on this goroutine and its table row says it releases the
// frame.
func (s *Server) dispatch(ctx context.Context, frame []byte, held int, mem *requestMemory, resp *responder, p *pending, conn *handler.Conn, mute *connMute, log *slog.Logger) (key int16, async, released bool) {
	start := time.Now()
	h, body, err := wire.ParseHeader(frame)
	if err != nil {
		mem.release(held)
		p.err = err
		resp.complete(p)
		return h.Key, false, false
	}
	if h.Key == kmsg.ApiVersions.Int16() && !handler.Supported(h.Key, h.Version) {
		mem.release(held)
		p.frame, p.err = wire.EncodeResponse(h.CorrelationID, handler.UnsupportedApiVersions(), nil, nil)
		resp.complete(p)
		return h.Key, false, false
	}
	if conn.SASL != nil {
		if err := conn.SASL.Allow(h.Key); err != nil {
			mem.release(held)
			if r := conn.SASL.Refusal(h.Key, h.Version); r != nil {
				log.Warn("closing connection after answering ILLEGAL_SASL_STATE", "err", err)
				p.frame, p.err = wire.EncodeResponse(h.CorrelationID, r, nil, nil)
				p.close = true
			} else {
				p.err = err
			}
			resp.complete(p)
			return h.Key, false, false
		}
	}
	api, ok := handler.Lookup(h.Key)
	if !ok || !handler.Supported(h.Key, h.Version) {
		mem.release(held)
		p.err = fmt.Errorf("unsupported api key %d version %d (client %q)", h.Key, h.Version, h.ClientID)
		resp.complete(p)
		return h.Key, false, false
	}
	req, err := wire.DecodeBody(h, body)
	if err != nil {
		mem.release(held)
		p.err = err
		resp.complete(p)
		return h.Key, false, false
	}
	hreq := &handler.Request{Header: h, Body: req, Bytes: len(frame) + 4, Conn: conn}
	s.env.Metrics.Start(h.Key)
	// ran is the handler's time on this goroutine, for request_percentage.
	finish := func(res handler.Result, err error, ran time.Duration) {
		var wait time.Duration
		if err == nil {
			d, after := throttle(s.env.Quotas, api, hreq, res, ran)
			if mute.extend(d); !after {
				wait = d // before KIP-219 the response itself is held back
			}
		}
		p.frame, p.err = s.encode(hreq, res, err)
		p.close = res.Close
		s.env.Metrics.Observe(h.Key, time.Since(start), p.err != nil)
		if wait > 0 {
			time.AfterFunc(wait, func() { resp.complete(p) })
			return
		}
		resp.complete(p)
	}
	if api.Async {
		go func() {
			res, err := s.run(ctx, api, hreq, log)
			mem.release(held)
			finish(res, err, 0)
		}()
		return h.Key, true, false
	}
	res, err := s.run(ctx, api, hreq, log)
	ran := time.Since(start)
	mem.release(held)
	if err == nil && res.Later != nil {
		// The request goes on off this goroutine; later requests of the
		// connection are read (and their responses queued) meanwhile.
		go func() {
			res, err := s.later(ctx, api, hreq, res.Later, log)
			finish(res, err, ran)
		}()
		return h.Key, true, api.ReleasesFrame
	}
	finish(res, err, ran)
	return h.Key, false, api.ReleasesFrame
}

// rawToken answers a bare SASL token of a client that sent SaslHandshake
// v0 with the bare reply; it reports whether the connection goes on (a
// failed exchange closes it without a reply, as Kafka does). Once the
// exchange completes the connection carries the SASL principal, as after
// a SaslAuthenticate, for quotas and logs as for the authorizer.
func rawToken(ctx context.Context, conn *handler.Conn, frame []byte, held int, mem *requestMemory, resp *responder, p *pending) bool {
	out, err := conn.SASL.RawToken(ctx, frame)
	mem.release(held)
	if err != nil {
		p.err = err
		resp.complete(p)
		return false
	}
	if principal := conn.SASL.Principal(); principal != "" {
		conn.Principal = principal
	}
	p.frame = wire.RawFrame(out)
	resp.complete(p)
	return true
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
