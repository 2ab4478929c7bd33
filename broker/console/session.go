package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/strata-broker/strata/broker/sasl"
	"github.com/strata-broker/strata/metadata"
)

// anonymous is the principal without a login, as Kafka's on a
// PLAINTEXT listener.
const anonymous = "User:ANONYMOUS"

// sessionCookie names the session's cookie.
const sessionCookie = "strata_console"

// sessionTTL is how long a session lives after its last use.
const sessionTTL = 8 * time.Hour

// maxSessions bounds the sessions kept; past it the expired ones and
// then the least recently used one are dropped.
const maxSessions = 10000

// session is one browser's login: its principal and CSRF token.
type session struct {
	principal string
	csrf      string
	expires   time.Time
}

// checkCSRF reports whether a state-changing request carries the
// session's token (form field csrf, or the X-CSRF-Token header htmx
// sends).
func (s *session) checkCSRF(r *http.Request) bool {
	tok := r.Header.Get("X-CSRF-Token")
	if tok == "" {
		tok = r.PostFormValue("csrf")
	}
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.csrf)) == 1
}

// sessions are the console's sessions, in memory: a broker restart logs
// everyone out.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
}

func newSessions() *sessions { return &sessions{byID: map[string]*session{}} }

// get returns r's live session, nil when it has none.
func (ss *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byID[c.Value]
	if !ok {
		return nil
	}
	now := time.Now()
	if now.After(s.expires) {
		delete(ss.byID, c.Value)
		return nil
	}
	s.expires = now.Add(sessionTTL)
	return s
}

// create starts a session for principal and sets its cookie.
func (ss *sessions) create(w http.ResponseWriter, principal string) *session {
	id, csrf := randomToken(), randomToken()
	s := &session{principal: principal, csrf: csrf, expires: time.Now().Add(sessionTTL)}
	ss.mu.Lock()
	if len(ss.byID) >= maxSessions {
		ss.evict(time.Now())
	}
	ss.byID[id] = s
	ss.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return s
}

// evict drops the expired sessions and, when none had expired, the one
// used least recently (a flood of new sessions cannot push out a user
// who is still active before older idle ones). Called with mu held.
func (ss *sessions) evict(now time.Time) {
	var oldest string
	for k, v := range ss.byID {
		if now.After(v.expires) {
			delete(ss.byID, k)
		} else if oldest == "" || v.expires.Before(ss.byID[oldest].expires) {
			oldest = k
		}
	}
	if len(ss.byID) >= maxSessions {
		delete(ss.byID, oldest)
	}
}

// drop ends r's session.
func (ss *sessions) drop(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		ss.mu.Lock()
		delete(ss.byID, c.Value)
		ss.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// remoteHost is the client's address, for ACLs' host field.
func remoteHost(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// errBadLogin is every failed login's answer, whatever failed.
var errBadLogin = errors.New("unknown user or wrong password")

// checkScram checks user's password against the broker's stored SCRAM
// credentials (either mechanism): the password salted with the stored
// salt and iterations must give the stored StoredKey.
func checkScram(cache *metadata.Cache, user, password string) error {
	if user == "" || password == "" {
		return errBadLogin
	}
	for _, mech := range []string{"SCRAM-SHA-512", "SCRAM-SHA-256"} {
		cred, ok := cache.ScramCredential(user, mech)
		if !ok {
			continue
		}
		got, err := sasl.ScramCredentialWithSalt(mech, password, cred.Salt, int(cred.Iterations))
		if err != nil {
			return fmt.Errorf("console login: %w", err)
		}
		if subtle.ConstantTimeCompare(got.StoredKey, cred.StoredKey) == 1 {
			return nil
		}
		return errBadLogin
	}
	return errBadLogin
}

// loginData is the login page's data.
type loginData struct {
	Next  string
	Error string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.renderLogin(w, http.StatusOK, loginData{Next: safeNext(r.FormValue("next"))})
}

func (s *Server) renderLogin(w http.ResponseWriter, code int, d loginData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := s.pages["login"].ExecuteTemplate(w, "layout", page{Title: "Log in", Login: s.o.Login, Data: d}); err != nil {
		s.o.Log.Error("console: render login", "err", err)
	}
}

// login checks the form's user and password and starts a session. The
// login form needs no CSRF token: it changes nothing but the session
// (SameSite=Strict cookies keep it from being planted cross-site).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	if !s.o.Login {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	var env = s.o.Env()
	if env == nil {
		http.Error(w, "the broker is still starting", http.StatusServiceUnavailable)
		return
	}
	user := strings.TrimSpace(r.PostFormValue("user"))
	if err := checkScram(env.Cache, user, r.PostFormValue("password")); err != nil {
		s.renderLogin(w, http.StatusUnauthorized, loginData{Next: next, Error: errBadLogin.Error()})
		return
	}
	s.sessions.create(w, "User:"+user)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(q *req) {
	s.sessions.drop(q.w, q.r)
	http.Redirect(q.w, q.r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	return next
}
