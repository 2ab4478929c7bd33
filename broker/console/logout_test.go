package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// sessionOf is the site's session cookie ("" if none).
func sessionOf(t *testing.T, s *site) string {
	t.Helper()
	u, err := url.Parse(s.base)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.hc.Jar.Cookies(u) {
		if c.Name == "strata_console" {
			return c.Value
		}
	}
	return ""
}

// statusWith GETs path with only the session cookie id, following no
// redirect, and returns the status and Location.
func statusWith(t *testing.T, s *site, path, id string) (int, string) {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := http.NewRequest(http.MethodGet, s.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.AddCookie(&http.Cookie{Name: "strata_console", Value: id})
	res, err := hc.Do(r)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Location")
}

// TestLogout: with a login, logging out ends the session: the browser's
// next page is the login form, and the old session id, sent again, is
// refused too (the session is gone on the server, not just the cookie).
func TestLogout(t *testing.T) {
	s, _ := secureSite(t)
	s.must("/topics", "Log out")
	old := sessionOf(t, s)
	if old == "" {
		t.Fatal("no session cookie after the login")
	}
	if code, _ := statusWith(t, s, "/topics", old); code != http.StatusOK {
		t.Fatalf("GET /topics with the session: %d", code)
	}
	code, body := s.post("/logout", url.Values{})
	if code != http.StatusOK || !strings.Contains(body, `name="password"`) {
		t.Fatalf("POST /logout: %d, want the login form:\n%s", code, body)
	}
	if id := sessionOf(t, s); id != "" {
		t.Fatalf("session cookie %q kept after the logout", id)
	}
	if code, body := s.get("/topics"); code != http.StatusOK || !strings.Contains(body, `name="password"`) {
		t.Fatalf("GET /topics after the logout: %d, want the login form:\n%s", code, body)
	}
	if code, loc := statusWith(t, s, "/topics", old); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
		t.Fatalf("GET /topics with the logged-out session: %d %q, want a redirect to /login", code, loc)
	}
}

// TestLogoutAnonymous: without a login, logging out drops the anonymous
// session; the next page starts a new one.
func TestLogoutAnonymous(t *testing.T) {
	s := startSite(t, nil)
	// The pages answer 503 until the Kafka server has set the handlers'
	// Env, which may come just after the broker is ready.
	s.waitFor("/", "Cluster id")
	old := sessionOf(t, s)
	if old == "" {
		t.Fatal("no session cookie")
	}
	if code, _ := s.post("/logout", url.Values{}); code != http.StatusOK {
		t.Fatalf("POST /logout: %d", code)
	}
	s.must("/", "Cluster id")
	if id := sessionOf(t, s); id == "" || id == old {
		t.Fatalf("session after the logout %q, want a new one (was %q)", id, old)
	}
}
