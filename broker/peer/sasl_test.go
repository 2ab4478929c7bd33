package peer

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/metadata"
)

// saslBroker answers SaslHandshake and SaslAuthenticate (PLAIN, one
// user) with a session lifetime, and ApiVersions only once authenticated.
type saslBroker struct {
	ln         net.Listener
	lifetimeMs int64
	handshakes atomic.Int32
}

func startSASL(t *testing.T, lifetimeMs int64) *saslBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &saslBroker{ln: ln, lifetimeMs: lifetimeMs}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { b.serve(c) })
		}
	})
	return b
}

func (b *saslBroker) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	authed := false
	for {
		frame, err := wire.ReadFrame(br, 1<<20, nil)
		if err != nil {
			return
		}
		h, body, err := wire.ParseHeader(frame)
		if err != nil {
			return
		}
		req, err := wire.DecodeBody(h, body)
		if err != nil {
			return
		}
		var resp kmsg.Response
		switch r := req.(type) {
		case *kmsg.SASLHandshakeRequest:
			b.handshakes.Add(1)
			hr := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
			hr.SupportedMechanisms = []string{"PLAIN"}
			if r.Mechanism != "PLAIN" {
				hr.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			}
			resp = hr
		case *kmsg.SASLAuthenticateRequest:
			ar := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			if string(r.SASLAuthBytes) != "\x00broker\x00pw" {
				ar.ErrorCode = kerr.SaslAuthenticationFailed.Code
			} else {
				authed, ar.SessionLifetimeMillis = true, b.lifetimeMs
			}
			resp = ar
		default:
			if !authed {
				return
			}
			resp = kmsg.NewPtrApiVersionsResponse()
		}
		resp.SetVersion(h.Version)
		f, err := wire.EncodeResponse(h.CorrelationID, resp, nil, nil)
		if err != nil {
			return
		}
		if err := wire.WriteFrame(c, f); err != nil {
			return
		}
	}
}

// TestTransportSASL: a Transport with a SASL mechanism authenticates each
// connection it dials, re-authenticates one whose session is near its end
// before the next request, and fails to dial with a wrong password.
func TestTransportSASL(t *testing.T) {
	b := startSASL(t, 50)
	host, port, _ := net.SplitHostPort(b.ln.Addr().String())
	p, _ := strconv.Atoi(port)
	broker := metadata.Broker{ID: 1, Host: host, Port: int32(p)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tr := Transport{SASL: plain.Auth{User: "broker", Pass: "pw"}.AsMechanism()}
	c, err := tr.Dial(ctx, broker, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatal(err)
	}
	if b.handshakes.Load() != 1 || c.reauthAt.IsZero() {
		t.Fatalf("%d handshakes, re-authentication at %v", b.handshakes.Load(), c.reauthAt)
	}
	for deadline := time.Now().Add(5 * time.Second); !time.Now().After(c.reauthAt); {
		if time.Now().After(deadline) {
			t.Fatal("the session never neared its end")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := c.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatal(err)
	}
	if n := b.handshakes.Load(); n != 2 {
		t.Fatalf("%d handshakes after the session neared its end, want 2", n)
	}

	bad := Transport{SASL: plain.Auth{User: "broker", Pass: "nope"}.AsMechanism()}
	if _, err := bad.Dial(ctx, broker, "test"); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: %v", err)
	}
}
