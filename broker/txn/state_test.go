package txn

import (
	"testing"
)

// TestValidTransition checks the whole from × to matrix against Kafka's
// table of valid previous states, written out here row by row.
func TestValidTransition(t *testing.T) {
	// want[to] lists, in AllStates order (Empty, Ongoing, PrepareCommit,
	// PrepareAbort, CompleteCommit, CompleteAbort, Dead,
	// PrepareEpochFence), whether from → to is valid.
	want := map[State]string{
		Empty:             "10001100",
		Ongoing:           "11001100",
		PrepareCommit:     "01000000",
		PrepareAbort:      "11001101",
		CompleteCommit:    "00100000",
		CompleteAbort:     "00010000",
		Dead:              "10001100",
		PrepareEpochFence: "01000000",
	}
	for _, to := range AllStates {
		for i, from := range AllStates {
			if got, exp := ValidTransition(from, to), want[to][i] == '1'; got != exp {
				t.Errorf("ValidTransition(%s, %s) = %v, want %v", from, to, got, exp)
			}
		}
	}
}

func TestStateIDsAndNames(t *testing.T) {
	names := []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}
	for i, s := range AllStates {
		if int(s) != i || s.String() != names[i] {
			t.Errorf("state %d: id %d name %q, want %d %q", i, s, s.String(), i, names[i])
		}
		if !validState(s) {
			t.Errorf("validState(%s) = false", s)
		}
	}
	if validState(8) || validState(-1) {
		t.Error("validState accepts an unknown id")
	}
	for _, s := range AllStates {
		want := s == Empty || s == CompleteCommit || s == CompleteAbort
		if expirationAllowed(s) != want {
			t.Errorf("expirationAllowed(%s) = %v", s, !want)
		}
	}
}
