package harness

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a loopback TCP forwarder the test controls, so a broker can be
// cut off the network: brokers advertise a proxy's address and are reached
// only through it, and their etcd endpoints can be proxies too. Cut resets
// every connection through the proxy and blackholes new ones (accepted,
// read and discarded, never forwarded) until Heal.
//
// Concurrency: the accept loop and two copy goroutines per connection are
// owned by the proxy and end by Close (run at test end); mu guards target,
// cut and the connection sets.
type Proxy struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	target string
	cut    bool
	closed bool
	conns  map[net.Conn]struct{} // both ends of every live connection
	holes  map[net.Conn]struct{} // blackholed client connections
}

// StartProxy listens on a free loopback port and forwards each connection
// to target; target may be empty and set later with SetTarget (until then
// connections are closed at once). The proxy is closed when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("harness: proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, holes: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the host:port clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget changes where new connections are forwarded.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

// Cut resets every forwarded connection and blackholes new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		refuse(c)
	}
}

// Heal ends a Cut: blackholed connections are reset (their clients
// reconnect) and new connections are forwarded again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for c := range p.holes {
		refuse(c)
	}
}

// IsCut reports whether the proxy is cut.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	for c := range p.holes {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve forwards one client connection, or blackholes it while cut.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	p.mu.Lock()
	target, cut, closed := p.target, p.cut, p.closed
	if cut && !closed {
		p.holes[client] = struct{}{}
	}
	p.mu.Unlock()
	switch {
	case closed || (target == "" && !cut):
		refuse(client)
		return
	case cut:
		_, _ = io.Copy(io.Discard, client)
		client.Close()
		p.forget(client)
		return
	}
	server, err := net.Dial("tcp", target)
	if err != nil {
		refuse(client)
		return
	}
	p.mu.Lock()
	if p.cut || p.closed {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		pipe(server, client)
		close(done)
	}()
	pipe(client, server)
	<-done
	p.forget(client)
	p.forget(server)
}

// refuse resets a connection (the proxy's target is unreachable, or a cut
// begins or ends), so the peer sees ECONNRESET as after a network fault; a
// plain close reads as EOF, which franz-go takes for a TLS mismatch during
// its first request and does not retry.
func refuse(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// pipe copies src to dst and then closes both, so the other direction ends too.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.holes, c)
	p.mu.Unlock()
}

// Pause stops the broker process with SIGSTOP (it keeps its sockets but
// answers nothing, so its etcd lease runs out) and returns once every
// thread has stopped. Resume continues it. A paused process is resumed
// before it is stopped at test end.
func (p *Process) Pause() {
	p.t.Helper()
	if err := p.child.Pause(OpTimeout); err != nil {
		p.t.Fatalf("harness: pause broker: %v", err)
	}
	child := p.child
	p.t.Cleanup(func() { _ = child.Resume() })
}

// Resume sends SIGCONT to a paused broker.
func (p *Process) Resume() {
	p.t.Helper()
	if err := p.child.Resume(); err != nil {
		p.t.Fatalf("harness: resume broker: %v", err)
	}
}

// Pid is the process id of the running broker (0 when it is not running).
func (p *Process) Pid() int { return p.child.Pid() }
