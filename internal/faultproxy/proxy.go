// Package faultproxy is a loopback TCP forwarder that tests put between a
// client and a server to make the network fail in the ways a real one
// does: Pause holds every byte, as a stopped (SIGSTOP) peer does; Cut
// resets every connection and blackholes new ones, as a partition does;
// SetTarget and Reset follow a server restarted on another port. The etcd
// outage tests and the cluster fault suite share it.
//
// Concurrency: the accept loop and two copy goroutines per connection
// belong to the proxy and end by Close (run at test end); mu guards the
// target, the gate, the cut flag and the connection sets.
package faultproxy

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards each accepted connection to its target.
type Proxy struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	target string
	gate   chan struct{} // closed while bytes flow; open while paused
	cut    bool
	closed bool
	conns  map[net.Conn]struct{} // both ends of every forwarded connection
	holes  map[net.Conn]struct{} // blackholed client connections
}

// Start listens on a free loopback port and forwards each connection to
// target (a host:port); target may be empty and set later with SetTarget
// (until then connections are refused). The proxy is closed when the test
// ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: listen: %v", err)
	}
	p := &Proxy{
		ln: ln, target: target, gate: make(chan struct{}),
		conns: map[net.Conn]struct{}{}, holes: map[net.Conn]struct{}{},
	}
	close(p.gate)
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	return p
}

// Addr is the host:port clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Endpoint is Addr as an http URL, the form etcd clients take.
func (p *Proxy) Endpoint() string { return "http://" + p.Addr() }

// SetTarget forwards new connections to target.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

// Pause stops forwarding: every connection, open or new, stays connected
// and silent.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default: // already paused
	}
}

// Resume forwards again what Pause held.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openGate()
}

// openGate lets bytes flow; mu is held.
func (p *Proxy) openGate() {
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// Reset closes every forwarded connection, as a restarted server does.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
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
	p.openGate()
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve forwards one client connection, or blackholes it while cut.
func (p *Proxy) serve(client net.Conn) {
	p.mu.Lock()
	cut, closed := p.cut, p.closed
	if cut && !closed {
		p.holes[client] = struct{}{}
	}
	p.mu.Unlock()
	switch {
	case closed:
		refuse(client)
		return
	case cut:
		_, _ = io.Copy(io.Discard, client)
		p.forget(client)
		return
	}
	p.waitGate()
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	if target == "" {
		refuse(client)
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
		refuse(client)
		server.Close()
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		p.pipe(server, client)
		close(done)
	}()
	p.pipe(client, server)
	<-done
	p.forget(client)
	p.forget(server)
}

// waitGate blocks while the proxy is paused.
func (p *Proxy) waitGate() {
	p.mu.Lock()
	g := p.gate
	p.mu.Unlock()
	<-g
}

// pipe copies src to dst, holding each chunk while paused, then closes
// both so the other direction ends too.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.waitGate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.holes, c)
	p.mu.Unlock()
	c.Close()
}

// refuse resets a connection, so the peer sees ECONNRESET as after a
// network fault; a plain close reads as EOF, which franz-go takes for a
// TLS mismatch during its first request and does not retry.
func refuse(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}
