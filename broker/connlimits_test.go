package broker

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPerIPLimitClosesExcessConnections: a connection from an address
// that has max.connections.per.ip open (or its override: localhost, by
// name) is closed right after accept, and logged; once one closes, the
// address may connect again.
func TestPerIPLimitClosesExcessConnections(t *testing.T) {
	var rec recordLog
	r := serve(t, map[string]string{"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "localhost:2"}, &rec)
	addr := r.s.Addr()
	a1, a2 := dial(t, addr, "127.0.0.1"), dial(t, addr, "127.0.0.1")
	a1.ping()
	a2.ping()
	dial(t, addr, "127.0.0.1").closedByPeer()
	b1 := dial(t, addr, "127.0.0.2")
	b1.ping()
	dial(t, addr, "127.0.0.2").closedByPeer()
	a2.ping()
	b1.ping()

	a1.c.Close()
	waitFor(t, "the closed connection to be uncounted", func() bool { return r.s.node.clients.quotas.open() == 2 })
	dial(t, addr, "127.0.0.1").ping()
	if got := len(rec.messages("closing connection: its address has max.connections.per.ip open")); got != 2 {
		t.Errorf("%d rejections logged, want 2", got)
	}
}

// TestMaxConnectionsBlocksAccepting: with max.connections open, the next
// connection is not accepted (the kernel holds it) until one closes;
// then it is served.
func TestMaxConnectionsBlocksAccepting(t *testing.T) {
	r := serve(t, map[string]string{"max.connections": "2"}, nil)
	addr := r.s.Addr()
	c1, c2 := dial(t, addr, ""), dial(t, addr, "")
	c1.ping()
	c2.ping()
	c3 := dial(t, addr, "") // completes in the kernel's backlog
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	c3.send(req)
	if _, err := c3.recv(300 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("third connection over max.connections=2: %v, want no answer", err)
	}
	if got := r.s.node.clients.quotas.open(); got != 2 {
		t.Fatalf("%d connections open, want 2", got)
	}
	c1.c.Close()
	if _, err := c3.recv(runTimeout); err != nil {
		t.Fatalf("third connection after one closed: %v", err)
	}
	c2.ping()
}

// TestIdleConnectionsClosed: a connection with nothing to do for
// connections.max.idle.ms is closed; one whose request is still being
// answered (a long-polling Fetch) is not, however long it waits.
func TestIdleConnectionsClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	r := serve(t, map[string]string{"connections.max.idle.ms": fmt.Sprint(idle.Milliseconds())}, nil)
	addr := r.s.Addr()

	c := dial(t, addr, "")
	c.ping()
	answered := time.Now()
	c.closedByPeer()
	if waited := time.Since(answered); waited < idle*2/3 {
		t.Fatalf("closed %v after its last answer, before connections.max.idle.ms %v", waited, idle)
	}

	const topic = "idle-long-poll"
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version, create.TimeoutMillis = 5, 10000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
	create.Topics = append(create.Topics, ct)
	admin := dial(t, addr, "")
	admin.send(create)
	if _, err := admin.recv(runTimeout); err != nil {
		t.Fatal(err)
	}
	const maxWait = 5 * idle
	for attempt := 0; ; attempt++ {
		p := dial(t, addr, "") // each attempt on a new connection: the test's pauses may exceed idle
		fetch := kmsg.NewPtrFetchRequest()
		fetch.Version, fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 12, -1, int32(maxWait.Milliseconds()), 1, 1<<20
		fetch.SessionEpoch = -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
		start := time.Now()
		p.send(fetch)
		resp, err := p.recv(runTimeout)
		if err != nil {
			t.Fatalf("long-polling fetch over connections.max.idle.ms: %v", err)
		}
		if code := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			if attempt > 200 {
				t.Fatalf("fetch: error %d", code)
			}
			time.Sleep(10 * time.Millisecond) // the new partition is not led yet
			continue
		}
		if waited := time.Since(start); waited < maxWait*2/3 {
			t.Fatalf("fetch answered after %v, want a long poll of %v", waited, maxWait)
		}
		return
	}
}

// TestHalfSentFrameClosed: a request whose bytes keep trickling in, each
// well within connections.max.idle.ms of the last (which Kafka's idle
// check lets live for ever), is closed once it has not arrived whole
// within connections.max.idle.ms of its first byte; meanwhile another
// client is served.
func TestHalfSentFrameClosed(t *testing.T) {
	const idle = 600 * time.Millisecond
	var rec recordLog
	r := serve(t, map[string]string{"connections.max.idle.ms": fmt.Sprint(idle.Milliseconds())}, &rec)
	addr := r.s.Addr()
	slow := dial(t, addr, "")
	begun := time.Now()
	slow.write(binary.BigEndian.AppendUint32(nil, 1000))
	closed := make(chan time.Duration, 1)
	go func() {
		var b [1]byte
		_ = slow.c.SetReadDeadline(time.Now().Add(runTimeout))
		if _, err := slow.c.Read(b[:]); isClosed(err) {
			closed <- time.Since(begun)
		}
		close(closed)
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := make(chan struct{})
	defer close(stop)
	wg.Go(func() {
		for range 100 { // a byte every idle/6: never idle by Kafka's count
			select {
			case <-stop:
				return
			case <-time.After(idle / 6):
			}
			if _, err := slow.c.Write([]byte{0}); err != nil {
				return
			}
		}
	})
	for served := 0; ; served++ {
		select {
		case took, ok := <-closed:
			if !ok {
				t.Fatal("trickling connection not closed by the broker")
			}
			if took < idle*2/3 || took > idle*10 {
				t.Fatalf("trickling connection closed %v after its first byte, want about %v", took, idle)
			}
			if served == 0 {
				t.Fatal("no other request served meanwhile")
			}
			if got := len(rec.messages("closing connection: request frame not received whole within connections.max.idle.ms")); got != 1 {
				t.Errorf("%d such closes logged, want 1", got)
			}
			return
		case <-time.After(idle / 10):
			dial(t, addr, "").ping() // a new connection each time: the test's pauses may exceed idle
		}
	}
}

// TestAnnouncedLargeFramesKeepHeapSmall: 100 connections that each
// announce a 100 MiB request and send 10 bytes of it make the broker
// hold about what they sent, not what they announced (the Go heap grows
// by less than 64 MiB), while another client is served.
func TestAnnouncedLargeFramesKeepHeapSmall(t *testing.T) {
	const conns, sent = 100, 10
	r := serve(t, map[string]string{"socket.request.max.bytes": fmt.Sprint(100 << 20)}, nil)
	addr := r.s.Addr()
	dial(t, addr, "").ping()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rssBefore := vmRSS(t)
	for range conns {
		c := dial(t, addr, "")
		c.write(append(binary.BigEndian.AppendUint32(nil, 100<<20), make([]byte, sent)...))
	}
	mem := r.s.node.clients.mem
	waitFor(t, "the broker to read every connection's bytes", func() bool { return mem.used.Load() == conns*sent })
	start := time.Now()
	dial(t, addr, "").ping()
	took := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use grew by %.1f MiB, RSS by %.1f MiB; another client's round trip took %v",
		float64(grew)/(1<<20), float64(vmRSS(t)-rssBefore)/(1<<20), took)
	if grew > 64<<20 {
		t.Fatalf("heap in use grew by %d MiB for %d connections that sent %d bytes each", grew>>20, conns, sent)
	}
}

// vmRSS is this process's resident set size in bytes (0 without /proc).
func vmRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			return kb << 10
		}
	}
	return 0
}

// metadataFrame is a Metadata request naming enough topics to take about
// size bytes (none exists, and none is created).
func metadataRequest(size int) kmsg.Request {
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 12, false
	for i := 0; i < size/64; i++ {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(fmt.Sprintf("no-such-topic-%06d-%s", i, strings.Repeat("x", 24)))
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestQueuedMaxRequestBytesPausesReading: when the request bytes read
// reach queued.max.request.bytes, a large request pauses past its first
// 64 KiB (small ones are still served) until the requests that hold the
// bytes are handled; then it is read and answered. The oldest request
// being read goes on, so the one holding the bytes can finish.
func TestQueuedMaxRequestBytesPausesReading(t *testing.T) {
	const limit = 128 << 10
	r := serve(t, map[string]string{"queued.max.request.bytes": fmt.Sprint(limit)}, nil)
	addr := r.s.Addr()
	mem := r.s.node.clients.mem

	holder := dial(t, addr, "")
	first := holder.frame(metadataRequest(512 << 10))
	const part = 300 << 10
	holder.write(first[:part])
	waitFor(t, "the first request's bytes to be read", func() bool { return mem.used.Load() == part-4 })

	paused := dial(t, addr, "")
	paused.send(metadataRequest(200 << 10))
	waitFor(t, "the second large request to pause", func() bool { return mem.waiters.Load() == 1 })
	dial(t, addr, "").ping() // a small request is not paused
	if _, err := paused.recv(300 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("paused request: %v, want no answer yet", err)
	}

	holder.write(first[part:])
	if _, err := holder.recv(runTimeout); err != nil {
		t.Fatalf("request that held the bytes: %v", err)
	}
	resp, err := paused.recv(runTimeout)
	if err != nil {
		t.Fatalf("paused request after the bytes were given back: %v", err)
	}
	if n := len(resp.(*kmsg.MetadataResponse).Topics); n != (200<<10)/64 {
		t.Fatalf("answer for %d topics, want %d", n, (200<<10)/64)
	}
	waitFor(t, "every byte to be given back", func() bool { return mem.used.Load() == 0 })
}

// TestBadConnectionsCannotFloodTheLog: 50 connections that each send a
// malformed frame are all closed, but their warnings pass at the
// connection log's rate: a burst, then one a second.
func TestBadConnectionsCannotFloodTheLog(t *testing.T) {
	const conns = 50
	var rec recordLog
	r := serve(t, nil, &rec)
	start := time.Now()
	for range conns {
		c := dial(t, r.s.Addr(), "")
		c.write(binary.BigEndian.AppendUint32(nil, 0xfffffff0)) // a negative size
		c.closedByPeer()
	}
	allowed := connLogBurst + int(time.Since(start)/connLogEvery) + 1
	logged := rec.messages("closing connection: bad request frame")
	t.Logf("%d of %d warnings logged in %v", len(logged), conns, time.Since(start))
	if len(logged) > allowed || len(logged) < connLogBurst {
		t.Fatalf("%d of %d bad connections logged, want between %d and %d", len(logged), conns, connLogBurst, allowed)
	}
}

// TestUnreadResponsesClosed: a client that keeps sending requests and
// never reads the responses fills the socket buffers; the broker's write
// then stalls, and the connection is closed within
// connections.max.idle.ms instead of being held for ever.
func TestUnreadResponsesClosed(t *testing.T) {
	const idle = 400 * time.Millisecond
	var rec recordLog
	r := serve(t, map[string]string{"connections.max.idle.ms": fmt.Sprint(idle.Milliseconds())}, &rec)
	k := dial(t, r.s.Addr(), "")
	_ = k.c.(*net.TCPConn).SetReadBuffer(4 << 10)
	k.ping() // accepted and counted
	// Every broker key with its doc: tens of KiB a response.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeDocumentation = 4, true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	req.Resources = append(req.Resources, res)
	frame := k.frame(req)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for range 10000 { // until the broker closes the connection
			_ = k.c.SetWriteDeadline(time.Now().Add(runTimeout))
			if _, err := k.c.Write(frame); err != nil {
				return
			}
		}
	})
	waitFor(t, "the connection to be closed", func() bool { return r.s.node.clients.quotas.open() == 0 })
	k.c.Close()
	if got := len(rec.messages("closing connection: response not taken within connections.max.idle.ms")); got != 1 {
		t.Errorf("%d such closes logged, want 1", got)
	}
}

// TestInterBrokerListenerExemptFromMaxConnections: with several
// listeners, max.connections does not hold back connections on the
// inter-broker listener (Kafka's protected listener), which still count;
// the other listeners wait.
func TestInterBrokerListenerExemptFromMaxConnections(t *testing.T) {
	r := serve(t, map[string]string{
		"listeners":                      "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
		"inter.broker.listener.name":     "INTERNAL",
		"max.connections":                "1",
	}, nil)
	client, internal := r.s.ListenerAddr("CLIENT"), r.s.ListenerAddr("INTERNAL")
	c1 := dial(t, client, "")
	c1.ping()
	i1, i2 := dial(t, internal, ""), dial(t, internal, "")
	i1.ping()
	i2.ping()
	if got := r.s.node.clients.quotas.open(); got != 3 {
		t.Fatalf("%d connections open, want 3 (inter-broker ones count)", got)
	}
	c2 := dial(t, client, "")
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	c2.send(req)
	if _, err := c2.recv(300 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("client connection over max.connections=1: %v, want no answer", err)
	}
	c1.c.Close()
	i1.c.Close()
	i2.c.Close()
	if _, err := c2.recv(runTimeout); err != nil {
		t.Fatalf("client connection once the others closed: %v", err)
	}
}
