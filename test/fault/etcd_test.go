package fault

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// etcdOutage is how long the etcd outages of these tests and of the
// nemesis last: STRATA_FAULT_ETCD_OUTAGE seconds (`make chaos` sets 30),
// by default twice the brokers' lease TTL, so that leases expire.
func etcdOutage(t *testing.T) time.Duration {
	return time.Duration(envInt(t, "STRATA_FAULT_ETCD_OUTAGE", 2*sessionMs/1000)) * time.Second
}

// outageBegins is the broker's log message when etcd stops answering.
const outageBegins = `msg="etcd unreachable;`

// soloBroker is one broker process on a single etcd process, with a
// topic of one partition.
type soloBroker struct {
	t    *testing.T
	etcd *harness.Etcd
	proc *harness.Process
}

func startSolo(t *testing.T) *soloBroker {
	t.Helper()
	etcd := harness.StartEtcd(t)
	b := &soloBroker{t: t, etcd: etcd, proc: harness.StartProcess(t, soloConfig(etcd))}
	b.createTopic()
	return b
}

func soloConfig(etcd *harness.Etcd) map[string]string {
	return map[string]string{
		"metadata.etcd.endpoints":   etcd.Endpoint(),
		"broker.session.timeout.ms": strconv.Itoa(sessionMs),
		"auto.create.topics.enable": "false",
	}
}

func (b *soloBroker) createTopic() {
	b.t.Helper()
	cl := harness.NewClient(b.t, b.proc.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.t.Fatalf("create topic: %v", err)
	}
}

// logged counts the broker log's lines containing s.
func (b *soloBroker) logged(s string) int { return strings.Count(b.proc.Log(), s) }

// waitLogged waits until the broker logged s.
func (b *soloBroker) waitLogged(s string) {
	b.t.Helper()
	for deadline := time.Now().Add(settle); b.logged(s) == 0; {
		if time.Now().After(deadline) {
			b.t.Fatalf("broker never logged %q", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitServing waits until the broker is registered (it lists itself) and
// leads the partition again.
func (b *soloBroker) waitServing() time.Duration {
	b.t.Helper()
	cl := harness.NewClient(b.t, b.proc.Addr())
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err == nil && len(resp.Brokers) == 1 && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 &&
			resp.Topics[0].Partitions[0].Leader == resp.Brokers[0].NodeID {
			return time.Since(start)
		}
		if time.Since(start) > settle {
			b.t.Fatalf("broker not serving %v after the outage: %v %+v", settle, err, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serveThroughOutage runs one etcd outage (begin, then heal after
// etcdOutage) under a stream of acks=all records and checks the broker
// process kept serving: records produced early in the outage and again
// after its lease ran out are acknowledged and readable while it lasts,
// the outage is logged once, the broker serves again without a restart,
// and every acknowledged record is in the log exactly once, in order.
func (b *soloBroker) serveThroughOutage(begin, heal func()) {
	t := b.t
	const chunk = 500
	s := newStream(t, []string{b.proc.Addr()}, topic, 1, 1, 4*chunk)
	s.release(0, chunk)
	s.waitAcked(chunk)
	pid := b.proc.Pid()

	began := time.Now()
	begin()
	b.waitLogged(outageBegins)
	for i, at := range []time.Duration{0, etcdOutage(t) - time.Second} {
		time.Sleep(time.Until(began.Add(at)))
		s.release((i+1)*chunk, chunk)
		s.waitAcked((i + 2) * chunk)
		read := harness.ReadAll(t, b.proc.Addr(), topic)
		if n := len(read[0]); n < (i+2)*chunk {
			t.Fatalf("read %d records during the outage, want %d", n, (i+2)*chunk)
		}
		t.Logf("%v into the outage: %d records acknowledged and %d read", time.Since(began).Round(time.Millisecond), (i+2)*chunk, len(read[0]))
	}
	time.Sleep(time.Until(began.Add(etcdOutage(t))))
	heal()
	back := b.waitServing()
	b.waitLogged("etcd reachable again")
	t.Logf("serving again %v after etcd came back (outage %v)", back.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))

	s.release(3*chunk, chunk)
	s.finish()
	if !b.proc.Running() || b.proc.Pid() != pid {
		t.Fatalf("broker process restarted (pid %d, was %d)", b.proc.Pid(), pid)
	}
	if n := b.logged(outageBegins); n != 1 {
		t.Errorf("outage logged %d times, want once", n)
	}
	v := s.check(harness.ReadAll(t, b.proc.Addr(), topic))
	t.Logf("acked %d, read %d, lost %d, duplicated %d, gaps %d, out of order %d; lease %s",
		v.acked, v.read, v.lost, v.duplicated, v.gaps, v.disorder, b.leaseFate())
	for _, p := range v.problems {
		t.Error(p)
	}
	if v.acked != 4*chunk {
		t.Errorf("%d records acknowledged, want %d (last error %v)", v.acked, 4*chunk, s.lastEr)
	}
}

// leaseFate says whether the broker had to register again.
func (b *soloBroker) leaseFate() string {
	if b.logged("broker registered again") > 0 {
		return "expired: registered again"
	}
	return "kept"
}

// TestEtcdPausedPastLease: etcd SIGSTOPped for longer than the broker's
// lease. The broker serves fetches and acks=all produce from its cached
// metadata meanwhile, logs the outage once, and once etcd runs again
// (having expired the lease) registers again and serves on, without a
// restart and without losing or duplicating an acknowledged record.
func TestEtcdPausedPastLease(t *testing.T) {
	b := startSolo(t)
	b.serveThroughOutage(b.etcd.Pause, b.etcd.Resume)
	if b.leaseFate() != "expired: registered again" {
		t.Errorf("lease %s, want it expired by the paused etcd and the broker registered again", b.leaseFate())
	}
}

// TestEtcdKilledAndRestarted: etcd killed (SIGKILL) and restarted on its
// data after longer than the lease. The broker serves meanwhile and then
// on, without a restart (its lease may have survived: a restarted etcd
// extends every lease).
func TestEtcdKilledAndRestarted(t *testing.T) {
	b := startSolo(t)
	b.serveThroughOutage(b.etcd.Kill, b.etcd.Restart)
}

// TestBrokerStartsBeforeEtcd: a broker started while etcd is down logs
// that it waits, answers no Kafka request meanwhile, and serves once etcd
// starts; a broker whose etcd stays down past
// initial.broker.registration.timeout.ms exits non-zero.
func TestBrokerStartsBeforeEtcd(t *testing.T) {
	etcd := harness.NewEtcd(t)
	p := harness.LaunchProcess(t, soloConfig(etcd))
	b := &soloBroker{t: t, etcd: etcd, proc: p}
	b.waitLogged("waiting for it before accepting clients")
	if err := answers(p.Addr()); err == nil {
		t.Fatal("broker answered a Kafka request before it loaded its metadata")
	} else {
		t.Logf("before etcd runs: %v", err)
	}
	etcd.Launch()
	t.Cleanup(p.Stop) // before etcd stops
	p.WaitReady(settle)
	b.waitLogged("metadata store available")
	b.createTopic()
	s := newStream(t, []string{p.Addr()}, topic, 1, 1, 100)
	s.release(0, 100)
	s.finish()
	if v := s.check(harness.ReadAll(t, p.Addr(), topic)); v.acked != 100 || v.lost+v.duplicated > 0 {
		t.Fatalf("after start-up: %+v", v)
	}

	quick := harness.LaunchProcess(t, map[string]string{
		"metadata.etcd.endpoints":                "http://" + unusedAddr(t),
		"initial.broker.registration.timeout.ms": "3000",
	})
	select {
	case <-quick.Exited():
	case <-time.After(settle):
		t.Fatal("broker without etcd still running past initial.broker.registration.timeout.ms")
	}
	var exit *exec.ExitError
	if err := quick.Err(); !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("broker without etcd exited with %v, want a non-zero status", err)
	}
	if !strings.Contains(quick.Log(), "initial.broker.registration.timeout.ms") {
		t.Errorf("exit not explained in the log:\n%s", quick.Log())
	}
}

// answers reports whether addr answers an ApiVersions request within 2 s.
func answers(addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	return err
}

// unusedAddr is a loopback address nothing listens on.
func unusedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
