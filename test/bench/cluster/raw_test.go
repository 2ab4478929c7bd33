package main

import (
	"context"
	"testing"
	"time"
)

// The raw peer acknowledges a frame only once every replica has it, so
// after a run every replica's file holds the same bytes, and as many as
// were acknowledged.
func TestRawPeerReplicatesEveryAcknowledgedFrame(t *testing.T) {
	r, err := startRaw(t.TempDir(), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.stop(); err != nil {
			t.Error(err)
		}
	}()
	n, err := r.produce(context.Background(), 200*time.Millisecond, 2, 3)
	if err != nil || n == 0 {
		t.Fatalf("produce: %d bytes, %v", n, err)
	}
	var leaders int64
	for _, p := range r.parts {
		leaders += p.leader.end
	}
	if leaders != n {
		t.Fatalf("leaders hold %d bytes, %d acknowledged", leaders, n)
	}
	for i, p := range r.parts {
		p.mu.Lock()
		for j, a := range p.acked {
			if a != p.leader.end {
				t.Errorf("partition %d follower %d at %d, leader at %d", i, j, a, p.leader.end)
			}
		}
		p.mu.Unlock()
	}
}
