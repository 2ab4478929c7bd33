package etcdtest

import (
	"net"
	"sync"
	"testing"
)

// Proxy is a loopback TCP forwarder between a store and etcd, so a test
// can make etcd unreachable the way a stopped (SIGSTOP) process is: Pause
// holds every byte in either direction, on open connections and new ones
// alike, which stay connected; Resume lets them flow again. SetTarget
// moves new connections to another address (an etcd restarted on a new
// port), and Reset closes the open ones.
//
// Concurrency: the accept loop and two copy goroutines per connection
// belong to the proxy and end by its Close (run at test end); mu guards
// the target, the gate and the connection set.
type Proxy struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	target string
	gate   chan struct{} // closed while bytes flow; open while paused
	conns  map[net.Conn]struct{}
	closed bool
}

// StartProxy listens on a free loopback port and forwards to target (a
// host:port); it is closed when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, gate: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.gate)
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	return p
}

// Endpoint is the client URL to give the store.
func (p *Proxy) Endpoint() string { return "http://" + p.ln.Addr().String() }

// SetTarget forwards new connections to target.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

// Pause stops forwarding: every connection stays open and silent.
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
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// Reset closes every open connection (as a restarted server does).
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
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

// open registers c, or closes it if the proxy is closed.
func (p *Proxy) open(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serve(client net.Conn) {
	if !p.open(client) {
		return
	}
	defer p.forget(client)
	p.waitGate()
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	server, err := net.Dial("tcp", target)
	if err != nil || !p.open(server) {
		return
	}
	defer p.forget(server)
	done := make(chan struct{})
	go func() {
		p.pipe(client, server)
		close(done)
	}()
	p.pipe(server, client)
	<-done
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
