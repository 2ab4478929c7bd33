package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// serve runs a broker (testConfig with overrides) for the rest of the
// test, logging to h (nil: quietly); it must stop cleanly.
func serve(t *testing.T, overrides map[string]string, h slog.Handler) *startedServer {
	t.Helper()
	log := quietLog(t)
	if h != nil {
		log = slog.New(h)
	}
	r := startServerLogging(t, testConfig(t, t.TempDir(), overrides), log)
	t.Cleanup(func() {
		r.cancel()
		if err := r.wait(t); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

// waitFor polls cond until it holds, failing the test after runTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(runTimeout); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// kconn is a raw Kafka connection: requests in Kafka framing, responses
// read one at a time.
type kconn struct {
	t    *testing.T
	c    net.Conn
	corr int32
	sent []kmsg.Request // not yet answered, oldest first
}

// dial connects to addr from the loopback address local ("": any).
func dial(t *testing.T, addr, local string) *kconn {
	t.Helper()
	d := net.Dialer{Timeout: runTimeout}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &kconn{t: t, c: c}
}

// frame is req in Kafka framing, with the next correlation id.
func (k *kconn) frame(req kmsg.Request) []byte {
	k.corr++
	k.sent = append(k.sent, req)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("conn-test")).AppendRequest(nil, req, k.corr)
}

func (k *kconn) write(b []byte) {
	k.t.Helper()
	_ = k.c.SetWriteDeadline(time.Now().Add(runTimeout))
	if _, err := k.c.Write(b); err != nil {
		k.t.Fatalf("write: %v", err)
	}
}

func (k *kconn) send(req kmsg.Request) { k.write(k.frame(req)) }

// recv reads the response to the oldest unanswered request, waiting at
// most timeout; a timeout leaves the connection usable when nothing of
// the response had arrived.
func (k *kconn) recv(timeout time.Duration) (kmsg.Response, error) {
	_ = k.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(k.c, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(k.c, buf); err != nil {
		return nil, err
	}
	req := k.sent[0]
	k.sent = k.sent[1:]
	resp := req.ResponseKind()
	rd := kbin.Reader{Src: buf[4:]}
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		kmsg.SkipTags(&rd)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// pingRequest is an ApiVersions request, which needs nothing of the broker.
func pingRequest() kmsg.Request {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "conn-test", "1"
	return req
}

// ping sends ApiVersions and fails the test unless it is answered.
func (k *kconn) ping() {
	k.t.Helper()
	k.send(pingRequest())
	if _, err := k.recv(runTimeout); err != nil {
		k.t.Fatalf("ApiVersions: %v", err)
	}
}

// closedByPeer reads until the broker closes the connection, failing
// the test when anything else happens within runTimeout.
func (k *kconn) closedByPeer() {
	k.t.Helper()
	_ = k.c.SetReadDeadline(time.Now().Add(runTimeout))
	var b [1]byte
	n, err := k.c.Read(b[:])
	if n > 0 || !isClosed(err) {
		k.t.Fatalf("read %d bytes, %v; want the connection closed", n, err)
	}
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
