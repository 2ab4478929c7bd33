package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/wire"
)

// readCorrelations reads response frames off c until it closes and returns
// their correlation ids in order.
func readCorrelations(c net.Conn) []int32 {
	var ids []int32
	for {
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return ids
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, body); err != nil {
			return ids
		}
		ids = append(ids, int32(binary.BigEndian.Uint32(body)))
	}
}

func heartbeatFrame(t *testing.T, corr int32) *wire.Frame {
	t.Helper()
	f, err := wire.EncodeResponse(corr, kmsg.NewPtrHeartbeatResponse(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestResponderKeepsRequestOrder: at most maxInFlight requests wait for
// their responses; those, completed in any order on any goroutine, go out
// in request order, and wait returns once all did.
func TestResponderKeepsRequestOrder(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	_, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newResponder(server, cancel, slog.New(slog.DiscardHandler))
	const n = maxInFlight
	ps := make([]*pending, n)
	for i := range ps {
		p, ok := r.add(context.Background())
		if !ok {
			t.Fatal("add refused")
		}
		p.frame = heartbeatFrame(t, int32(i))
		ps[i] = p
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, ok := r.add(done); ok {
		t.Fatal("add past maxInFlight unanswered requests did not wait")
	}
	got := make(chan []int32, 1)
	go func() { got <- readCorrelations(client) }()
	var wg sync.WaitGroup
	for _, i := range rand.Perm(n) {
		wg.Go(func() { r.complete(ps[i]) })
	}
	wg.Wait()
	r.wait()
	server.Close()
	ids := <-got
	if len(ids) != n {
		t.Fatalf("%d responses, want %d", len(ids), n)
	}
	for i, id := range ids {
		if id != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, id)
		}
	}
}

// TestResponderDropsAfterFailure: a request that closes the connection
// cancels it; it and every later response are dropped, the earlier ones
// were written, and no response is skipped silently before it.
func TestResponderDropsAfterFailure(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r := newResponder(server, cancel, slog.New(slog.DiscardHandler))
	got := make(chan []int32, 1)
	go func() { got <- readCorrelations(client) }()
	var ps []*pending
	for i := range 5 {
		p, _ := r.add(context.Background())
		switch {
		case i == 2:
			p.err = errors.New("bad request")
		default:
			p.frame = heartbeatFrame(t, int32(i))
		}
		ps = append(ps, p)
	}
	for i := len(ps) - 1; i >= 0; i-- {
		r.complete(ps[i])
	}
	r.wait()
	if ctx.Err() == nil {
		t.Fatal("the failing request did not cancel the connection")
	}
	server.Close()
	if ids := <-got; len(ids) != 2 || ids[0] != 0 || ids[1] != 1 {
		t.Fatalf("written %v, want [0 1]", ids)
	}
}
