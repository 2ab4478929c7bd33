package hostile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// dialFrom opens a TCP connection to addr from the local address ip
// ("" for any), closed when the test ends.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: livenessBound}
	if ip != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %q: %v", addr, ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// idleConns opens n connections to addr that send nothing.
func idleConns(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		conns = append(conns, dialFrom(t, "", addr))
	}
	return conns
}

// write sends b on c, failing the test unless it is all written within
// livenessBound.
func write(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	_ = c.SetWriteDeadline(time.Now().Add(livenessBound))
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write %d bytes: %v", len(b), err)
	}
}

// frame is a request frame: a size field (which may lie) and a body.
func frame(size int32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), body...)
}

// encode frames req as a request with correlation id corr.
func encode(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile")).AppendRequest(nil, req, corr)
}

// request sends req on c (at the version req carries) and reads its
// response within livenessBound; an error means the broker closed the
// connection or sent something unreadable.
func request(c net.Conn, req kmsg.Request) (kmsg.Response, error) {
	_ = c.SetDeadline(time.Now().Add(livenessBound))
	if _, err := c.Write(encode(req, 7)); err != nil {
		return nil, fmt.Errorf("write %s v%d: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, fmt.Errorf("read %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return nil, fmt.Errorf("read %s v%d response body: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != 7 {
		return nil, fmt.Errorf("%s response: bad correlation id in % x", kmsg.NameForKey(req.Key()), body[:min(len(body), 8)])
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(body) == 0 || body[0] != 0 {
			return nil, fmt.Errorf("%s response: unexpected tagged header fields", kmsg.NameForKey(req.Key()))
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// isClosed reports whether err from a read or write means the peer
// closed the connection.
func isClosed(err error) bool {
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// waitClosed waits until the broker at addr has closed its end of every
// one of conns (no ESTABLISHED socket from addr to the connection's local
// address in /proc/net/tcp), without reading them: a connection whose
// client never reads, or that holds thousands of peers, is watched from
// the kernel's table. It fails the test after within.
func waitClosed(t *testing.T, addr string, conns []net.Conn, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		open := establishedFrom(t, addr)
		left := 0
		for _, c := range conns {
			if open[c.LocalAddr().String()] {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections still open at the broker %v later", left, len(conns), within)
		}
		<-tick.C
	}
}

// establishedFrom returns the remote addresses of the ESTABLISHED IPv4
// sockets whose local address is addr.
func establishedFrom(t *testing.T, addr string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatalf("read the TCP socket table: %v", err)
	}
	local := procAddr(t, addr)
	out := map[string]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[1] != local || f[3] != "01" {
			continue
		}
		out[hostPort(f[2])] = true
	}
	return out
}

// procAddr is addr as /proc/net/tcp writes it: the IPv4 address as a
// little-endian hex word, a colon and the port in hex.
func procAddr(t *testing.T, addr string) string {
	t.Helper()
	ap, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil || ap.IP.To4() == nil {
		t.Fatalf("not an IPv4 address: %q (%v)", addr, err)
	}
	ip := ap.IP.To4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], ap.Port)
}

// hostPort turns an address of /proc/net/tcp back into host:port.
func hostPort(s string) string {
	ipHex, portHex, _ := strings.Cut(s, ":")
	v, _ := strconv.ParseUint(ipHex, 16, 32)
	port, _ := strconv.ParseUint(portHex, 16, 16)
	ip := net.IPv4(byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10))
}
