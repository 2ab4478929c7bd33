package coordkey

import "testing"

// Expected values computed with Java's String.hashCode semantics over
// UTF-16 code units.
func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		key  string
		hash int32
		p50  int32
	}{
		{"", 0, 0},
		{"hello", 99162322, 22},
		{"my-group", -1906497762, 12},
		{"polygenelubricants", -2147483648, 0}, // Integer.MIN_VALUE: Kafka's abs gives 0
		{"grüße", 98768023, 23},
		{"😀group", -1231696132, 32}, // a surrogate pair
		{"console-consumer-12345", 158455506, 6},
	} {
		if h := javaHashCode(tc.key); h != tc.hash {
			t.Errorf("javaHashCode(%q) = %d, want %d", tc.key, h, tc.hash)
		}
		if p := PartitionFor(tc.key, 50); p != tc.p50 {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", tc.key, p, tc.p50)
		}
	}
	if p := PartitionFor("x", 0); p != 0 {
		t.Errorf("PartitionFor with no partitions = %d", p)
	}
}
