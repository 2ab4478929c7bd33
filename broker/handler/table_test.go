package handler

import "testing"

// TestReleasesFrameOnlyInline: a handler that runs off the connection's
// reading goroutine (Async) is still running when the next request is
// read, so it cannot release its frame to it.
func TestReleasesFrameOnlyInline(t *testing.T) {
	for _, k := range Keys() {
		if a, _ := Lookup(k); a.ReleasesFrame && a.Async {
			t.Errorf("%s is both Async and ReleasesFrame", a.Key.Name())
		}
	}
}
