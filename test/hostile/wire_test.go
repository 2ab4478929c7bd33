package hostile

import (
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// wireCases attack the connection layer: bytes that are not requests,
// frames whose length lies, connections that hold resources.
var wireCases = []hostileCase{
	{name: "random_bytes", run: randomBytes},
	{name: "lying_lengths", run: lyingLengths},
	{name: "announce_100MB_send_10_bytes", memory: true, run: announceLarge},
	{name: "half_sent_frame_trickled", run: trickledFrame},
	{name: "idle_connections", memory: true, run: idleConnections},
	{name: "10k_pipelined_requests_never_read", memory: true, run: pipelinedUnread},
	{name: "per_ip_limit", run: perIPLimit},
}

// randomBytes writes random bytes (1 to 4 KiB, fixed seeds) on 32
// connections at once; the broker closes each one, at once or, when the
// bytes announce a frame they never complete, within the idle timeout.
func randomBytes(t *testing.T, g *target) {
	rng := rand.New(rand.NewPCG(7, 11))
	var conns []net.Conn
	for range 32 {
		b := make([]byte, 1+rng.IntN(4096))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		c := dialFrom(t, "", g.p.Addr())
		_ = c.SetWriteDeadline(time.Now().Add(livenessBound))
		_, _ = c.Write(b) // the broker may close before all is written
		conns = append(conns, c)
	}
	waitClosed(t, g.p.Addr(), conns, closeBound)
}

// lyingLengths sends frames whose size field lies: negative, too small
// for a request header, over socket.request.max.bytes, or larger than
// what follows. Each connection is closed.
func lyingLengths(t *testing.T, g *target) {
	header := []byte{0, 18, 0, 3, 0, 0, 0, 1, 0, 1, 'x'} // ApiVersions v3
	frames := map[string][]byte{
		"negative":                 frame(-5, nil),
		"most negative":            frame(-1<<31, header),
		"zero":                     frame(0, nil),
		"shorter than a header":    frame(4, header[:4]),
		"header only, body absent": frame(int32(len(header)+100), header),
		"over request max":         frame(1<<31-1, header),
		"unknown api key":          frame(23, append([]byte{0x30, 0x39, 0, 0, 0, 0, 0, 1, 0, 1, 'x'}, "garbage-body"...)),
		"body shorter than claims": frame(1000, append(header, 1, 2, 3)),
	}
	var conns []net.Conn
	for name, f := range frames {
		c := dialFrom(t, "", g.p.Addr())
		_ = c.SetWriteDeadline(time.Now().Add(livenessBound))
		if _, err := c.Write(f); err != nil && !isClosed(err) {
			t.Fatalf("%s: write: %v", name, err)
		}
		conns = append(conns, c)
	}
	waitClosed(t, g.p.Addr(), conns, closeBound)
}

// announceLarge opens connections that each announce a 100 MB request
// and send 10 bytes of it (5 GB announced in all): the broker holds what
// arrived, not what was announced, serves others meanwhile, and closes
// each connection once its frame has not arrived whole within the idle
// timeout.
func announceLarge(t *testing.T, g *target) {
	n := scaled(50, 500)
	var conns []net.Conn
	for range n {
		c := dialFrom(t, "", g.p.Addr())
		write(t, c, frame(100_000_000, []byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 1}))
		conns = append(conns, c)
	}
	if took, err := g.roundTrip(); err != nil {
		t.Fatalf("while %d frames of 100 MB are announced, a fresh client is not served: %v", n, err)
	} else {
		t.Logf("round trip with %d frames of 100 MB announced: %v", n, took.Round(time.Millisecond))
	}
	t.Logf("broker RSS with %d frames of 100 MB announced: %s", n, mib(g.p.RSS()))
	waitClosed(t, g.p.Addr(), conns, closeBound)
}

// trickledFrame announces a 1000-byte frame and sends one byte of it at
// a time, never letting the connection idle (slowloris): the broker
// closes it once the frame has not arrived whole within the idle
// timeout.
func trickledFrame(t *testing.T, g *target) {
	c := dialFrom(t, "", g.p.Addr())
	write(t, c, frame(1000, nil))
	tick := time.NewTicker(idleTimeout / 10)
	defer tick.Stop()
	deadline := time.Now().Add(closeBound)
	for sent := 0; ; sent++ {
		<-tick.C
		_ = c.SetWriteDeadline(time.Now().Add(livenessBound))
		if _, err := c.Write([]byte{0}); err != nil {
			t.Logf("closed by the broker after %d trickled bytes", sent)
			return
		}
		if !establishedFrom(t, g.p.Addr())[c.LocalAddr().String()] {
			t.Logf("closed by the broker after %d trickled bytes", sent)
			return
		}
		if sent >= 990 || time.Now().After(deadline) {
			t.Fatalf("trickling connection still open after %d bytes", sent+1)
		}
	}
}

// idleConnections opens thousands of connections that send nothing: the
// broker accepts them, serves a fresh client meanwhile, and closes them
// at the idle timeout.
func idleConnections(t *testing.T, g *target) {
	n := scaled(3000, 10000)
	conns := idleConns(t, g.p.Addr(), n)
	took, err := g.roundTrip()
	if err != nil {
		t.Fatalf("with %d idle connections open, a fresh client is not served: %v", n, err)
	}
	t.Logf("round trip with %d idle connections open: %v; broker RSS %s", n, took.Round(time.Millisecond), mib(g.p.RSS()))
	waitClosed(t, g.p.Addr(), conns, closeBound+livenessBound)
	for _, c := range conns {
		c.Close()
	}
}

// pipelinedUnread writes 10,000 DescribeConfigs requests (tens of KiB of
// answer each) on one connection and never reads: the socket buffers
// fill, the broker's writes stall, and it closes the connection within
// the idle timeout instead of queueing the answers.
func pipelinedUnread(t *testing.T, g *target) {
	c := dialFrom(t, "", g.p.Addr())
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeDocumentation = 4, true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	req.Resources = append(req.Resources, res)
	f := encode(req, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	written := 0
	wg.Go(func() {
		for range 10000 { // until the broker closes the connection
			_ = c.SetWriteDeadline(time.Now().Add(closeBound))
			if _, err := c.Write(f); err != nil {
				return
			}
			written++
		}
	})
	waitClosed(t, g.p.Addr(), []net.Conn{c}, closeBound)
	c.Close()
	wg.Wait()
	t.Logf("the broker closed the connection after %d requests were written", written)
}

// perIPLimit opens twice limitedConns connections from limitedIP, whose
// max.connections.per.ip override is limitedConns: as many are served
// and the rest are closed, while 127.0.0.1 is served as usual.
func perIPLimit(t *testing.T, g *target) {
	var conns []net.Conn
	for range 2 * limitedConns {
		conns = append(conns, dialFrom(t, limitedIP, g.p.Addr()))
	}
	served := 0
	for _, c := range conns {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		if _, err := request(c, req); err == nil {
			served++
		}
	}
	if served != limitedConns {
		t.Fatalf("%d of %d connections from %s served, want its limit of %d", served, len(conns), limitedIP, limitedConns)
	}
	for _, c := range conns {
		c.Close()
	}
	waitClosed(t, g.p.Addr(), conns, closeBound)
}
