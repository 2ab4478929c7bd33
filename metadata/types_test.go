package metadata

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestTopicIDForm(t *testing.T) {
	for range 1000 {
		id := NewTopicID()
		s := id.String()
		if len(s) != 22 || strings.HasPrefix(s, "-") || id.IsZero() {
			t.Fatalf("bad id %q", s)
		}
		if id[6]>>4 != 4 || id[8]>>6 != 2 {
			t.Fatalf("id %x is not a version-4 UUID", id[:])
		}
		back, err := ParseTopicID(s)
		if err != nil || back != id {
			t.Fatalf("ParseTopicID(%q) = %v, %v", s, back, err)
		}
	}
	// Kafka prints Uuid(0x0123456789abcdef, 0x0123456789abcdef) as this.
	id := TopicID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	if got, want := id.String(), "ASNFZ4mrze8BI0VniavN7w"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if !(TopicID{}).IsZero() {
		t.Fatal("zero id not IsZero")
	}
	for _, bad := range []string{"", "short", "ASNFZ4mrze8BI0VniavN7w==", "ASNFZ4mrze8BI0VniavN7!"} {
		if _, err := ParseTopicID(bad); err == nil {
			t.Errorf("ParseTopicID(%q) succeeded", bad)
		}
	}
}

func TestTopicIDJSON(t *testing.T) {
	id := NewTopicID()
	b, err := json.Marshal(struct{ ID TopicID }{id})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ID":"` + id.String() + `"}`; string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
	var back struct{ ID TopicID }
	if err := json.Unmarshal(b, &back); err != nil || back.ID != id {
		t.Fatalf("round trip = %v, %v", back.ID, err)
	}
	if err := json.Unmarshal([]byte(`{"ID":"nope"}`), &back); err == nil {
		t.Fatal("bad id accepted")
	}
}

func TestValidateTopicName(t *testing.T) {
	for _, ok := range []string{"a", "orders.v1", "A_b-9", strings.Repeat("x", MaxTopicNameLen)} {
		if err := ValidateTopicName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a b", "ü", strings.Repeat("x", MaxTopicNameLen+1)} {
		if err := ValidateTopicName(bad); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("%q: %v, want ErrInvalidTopic", bad, err)
		}
	}
}

func TestPartitionStateValidate(t *testing.T) {
	good := PartitionState{Replicas: []int32{1, 2, 3}, Leader: 2, ISR: []int32{2, 3}}
	if err := good.Validate(); err != nil {
		t.Fatalf("good: %v", err)
	}
	offline := PartitionState{Replicas: []int32{1}, Leader: NoLeader}
	if err := offline.Validate(); err != nil {
		t.Fatalf("offline: %v", err)
	}
	for name, s := range map[string]PartitionState{
		"no replicas":    {Leader: NoLeader},
		"dup replica":    {Replicas: []int32{1, 1}, Leader: 1},
		"negative id":    {Replicas: []int32{-2}, Leader: NoLeader},
		"leader outside": {Replicas: []int32{1}, Leader: 2},
		"isr outside":    {Replicas: []int32{1}, Leader: 1, ISR: []int32{1, 2}},
		"dup isr":        {Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 1}},
		"neg epoch":      {Replicas: []int32{1}, Leader: 1, LeaderEpoch: -1},
	} {
		if err := s.Validate(); !errors.Is(err, ErrInvalidPartitions) {
			t.Errorf("%s: %v, want ErrInvalidPartitions", name, err)
		}
	}
	next := good
	next.PartitionEpoch = 1
	if err := ValidateTransition(good, next); err != nil {
		t.Errorf("transition: %v", err)
	}
	if err := ValidateTransition(next, next); !errors.Is(err, ErrInvalidPartitions) {
		t.Errorf("same epoch: %v", err)
	}
	back := next
	back.PartitionEpoch, back.LeaderEpoch = 2, 0
	prev := next
	prev.LeaderEpoch = 3
	if err := ValidateTransition(prev, back); !errors.Is(err, ErrInvalidPartitions) {
		t.Errorf("leader epoch going back: %v", err)
	}
}

func TestTopicValidateAndClone(t *testing.T) {
	tp := Topic{Name: "t", Configs: map[string]string{"a": "b"}, Partitions: map[int32]PartitionState{
		0: {Replicas: []int32{1}, Leader: 1, ISR: []int32{1}},
		1: {Replicas: []int32{1}, Leader: 1, ISR: []int32{1}},
	}}
	if err := tp.Validate(); err != nil {
		t.Fatal(err)
	}
	c := tp.Clone()
	c.Configs["a"] = "changed"
	c.Partitions[0].ISR[0] = 9
	c.Partitions[2] = PartitionState{}
	if tp.Configs["a"] != "b" || tp.Partitions[0].ISR[0] != 1 || len(tp.Partitions) != 2 {
		t.Fatal("Clone shares memory with the original")
	}
	delete(tp.Partitions, 0)
	if err := tp.Validate(); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("partitions {1}: %v", err)
	}
	if err := ValidateNewPartitions("t", 3, map[int32]PartitionState{3: {Replicas: []int32{1}, Leader: NoLeader}, 4: {Replicas: []int32{1}, Leader: NoLeader}}); err != nil {
		t.Fatalf("3..4: %v", err)
	}
}

func TestBrokerAddr(t *testing.T) {
	if got := (Broker{Host: "::1", Port: 9092}).Addr(); got != "[::1]:9092" {
		t.Fatalf("Addr = %q", got)
	}
}
