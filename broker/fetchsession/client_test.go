package fetchsession

import (
	"testing"
	"time"
)

// TestClientWithCache runs a Client against a Cache: full, then
// incremental fetches naming only what changed, and a reset to full
// after a lost answer.
func TestClientWithCache(t *testing.T) {
	c := New(10, 1, EvictAfter)
	var cl Client
	fetch := func(parts []Partition) (sent []Partition, forgot []Key, kind Kind) {
		t.Helper()
		id, epoch, send, forget := cl.Build(parts)
		x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: epoch, Follower: true, Parts: send, Forgotten: forget}, time.Now())
		answers := make([]Answer, len(x.Parts))
		for i := range answers {
			answers[i] = idle(0)
		}
		got, _, err := x.Respond(nil, answers, time.Now())
		cl.Done(got, err == nil && x.Err == nil)
		return send, forget, x.Kind
	}
	ps := []Partition{part("a", 0, 0), part("a", 1, 0)}
	if sent, _, kind := fetch(ps); kind != Full || len(sent) != 2 || cl.SessionID() == InvalidSessionID {
		t.Fatalf("first fetch: kind %d, sent %d, session %d", kind, len(sent), cl.SessionID())
	}
	if sent, forgot, kind := fetch(ps); kind != Incremental || len(sent) != 0 || len(forgot) != 0 {
		t.Fatalf("unchanged fetch: kind %d, sent %v, forgot %v", kind, sent, forgot)
	}
	ps[1].FetchOffset = 7
	if sent, _, kind := fetch(ps); kind != Incremental || len(sent) != 1 || sent[0].FetchOffset != 7 {
		t.Fatalf("moved offset: kind %d, sent %v", kind, sent)
	}
	if sent, forgot, _ := fetch(ps[1:]); len(sent) != 0 || len(forgot) != 1 || forgot[0] != ps[0].Key {
		t.Fatalf("dropped partition: sent %v, forgot %v", sent, forgot)
	}
	old := cl.SessionID()
	cl.Build(ps) // its answer is lost
	cl.Reset()
	if sent, _, kind := fetch(ps); kind != Full || len(sent) != 2 || cl.SessionID() == old {
		t.Fatalf("after a reset: kind %d, sent %d, session %d (old %d)", kind, len(sent), cl.SessionID(), old)
	}
	if c.Sessions() != 1 {
		t.Fatalf("%d sessions cached, want 1 (the reset closes the old)", c.Sessions())
	}
}
