package peer

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
)

// echoBroker answers ApiVersions on loopback, counting its connections
// and remembering the client id of the last request.
type echoBroker struct {
	ln       net.Listener
	accepted atomic.Int32
	mu       sync.Mutex
	clientID string
}

func startEcho(t *testing.T) *echoBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoBroker{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			wg.Go(func() { e.serve(c) })
		}
	})
	return e
}

func (e *echoBroker) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		frame, err := wire.ReadFrame(br, 1<<20, nil)
		if err != nil {
			return
		}
		h, _, err := wire.ParseHeader(frame)
		if err != nil {
			return
		}
		e.mu.Lock()
		e.clientID = h.ClientID
		e.mu.Unlock()
		resp := kmsg.NewPtrApiVersionsResponse()
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

// register publishes broker id at addr in store.
func register(t *testing.T, s *memstore.Store, id int32, addr string) metadata.Registration {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	reg, err := s.RegisterBroker(t.Context(), metadata.Broker{ID: id, Host: host, Port: int32(p)}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestClientReusesAndRedials: requests to a broker share one idle
// connection and carry ClientID; a broker that moved is dialled at its new
// address; unknown brokers and a closed client fail.
func TestClientReusesAndRedials(t *testing.T) {
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	first, moved := startEcho(t), startEcho(t)
	reg := register(t, s, 1, first.ln.Addr().String())
	c := NewClient(s.Cache(), 0, Transport{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := func() error {
		r := kmsg.NewPtrApiVersionsRequest()
		r.SetVersion(3)
		_, err := c.Request(ctx, 1, r)
		return err
	}
	for range 3 {
		if err := req(); err != nil {
			t.Fatal(err)
		}
	}
	if n := first.accepted.Load(); n != 1 {
		t.Fatalf("%d connections for three requests, want 1", n)
	}
	first.mu.Lock()
	id := first.clientID
	first.mu.Unlock()
	if id != ClientID {
		t.Fatalf("client id %q, want %q", id, ClientID)
	}

	if err := reg.Close(); err != nil { // broker 1 restarts elsewhere
		t.Fatal(err)
	}
	register(t, s, 1, moved.ln.Addr().String())
	if err := req(); err != nil {
		t.Fatal(err)
	}
	if moved.accepted.Load() != 1 {
		t.Fatal("the moved broker was not dialled")
	}

	r := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.Request(ctx, 7, r); err == nil {
		t.Fatal("request to an unregistered broker succeeded")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := req(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// TestClientRedialsIdleConnections: a connection idle for maxIdle is not
// reused, since the other broker may have closed it
// (connections.max.idle.ms).
func TestClientRedialsIdleConnections(t *testing.T) {
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	echo := startEcho(t)
	register(t, s, 1, echo.ln.Addr().String())
	c := NewClient(s.Cache(), time.Nanosecond, Transport{}) // every kept connection is too old
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		r := kmsg.NewPtrApiVersionsRequest()
		r.SetVersion(3)
		if _, err := c.Request(ctx, 1, r); err != nil {
			t.Fatal(err)
		}
	}
	if n := echo.accepted.Load(); n != 2 {
		t.Fatalf("%d connections for two requests past the idle limit, want 2", n)
	}
}
