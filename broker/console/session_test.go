package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

// TestSessionEviction: past maxSessions a new session drops the one used
// least recently, never a user who was active since.
func TestSessionEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := newSessions()
		cookie := func() *http.Cookie {
			w := httptest.NewRecorder()
			ss.create(w, anonymous)
			return w.Result().Cookies()[0]
		}
		first := cookie()
		time.Sleep(time.Second)
		second := cookie()
		for range maxSessions - 2 {
			time.Sleep(time.Millisecond)
			cookie()
		}
		time.Sleep(time.Second)
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(first)
		if ss.get(r) == nil { // first is now the most recently used
			t.Fatal("first session gone before the limit")
		}
		cookie()
		if n := len(ss.byID); n != maxSessions {
			t.Fatalf("%d sessions after the limit, want %d", n, maxSessions)
		}
		if ss.get(r) == nil {
			t.Error("the session used last was evicted")
		}
		r = httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(second)
		if ss.get(r) != nil {
			t.Error("the session used least recently was kept")
		}
	})
}
