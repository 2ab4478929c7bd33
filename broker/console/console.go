package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/metadata"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options is what the broker gives the console.
type Options struct {
	// Env is the handlers' Env, nil until the Kafka server runs (pages
	// answer 503 until then).
	Env func() *handler.Env
	// ReadOnly is console.read.only: every state change is refused.
	ReadOnly bool
	// Login asks for a SCRAM user's name and password (a SASL listener
	// is configured); false: every visitor is User:ANONYMOUS.
	Login bool
	// Etcd is the metadata store's endpoints and their health; nil: not
	// shown.
	Etcd func(ctx context.Context) []metadata.EndpointHealth
	// ExportCap bounds an export's size in bytes (0: 10 MiB).
	ExportCap int
	// Log gets the console's errors (nil: discarded).
	Log *slog.Logger
}

// Server serves the console; it is an http.Handler.
type Server struct {
	o        Options
	mux      *http.ServeMux
	pages    map[string]*template.Template
	sessions *sessions
	lags     lagIndex
	tier     ttlCache[*tierView]
	// ctx bounds the background gathers of the caches; Close ends it
	// and waits for them (bg).
	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup
}

// Close ends the background gathers and waits for them; the broker
// calls it once the console's HTTP server has stopped.
func (s *Server) Close() {
	s.cancel()
	s.bg.Wait()
}

// gatherCtx bounds one gather of a cache: by peerWait, and by Close.
func (s *Server) gatherCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, peerWait)
}

// New builds the console's handler.
func New(o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.ExportCap <= 0 {
		o.ExportCap = 10 << 20
	}
	s := &Server{o: o, mux: http.NewServeMux(), pages: map[string]*template.Template{}, sessions: newSessions()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.lags.bg, s.tier.bg = &s.bg, &s.bg
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" || base == "pager" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/pager.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", n, err)
		}
		s.pages[base] = t
	}
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /login", s.loginPage)
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("POST /logout", s.authed(s.logout))
	s.mux.HandleFunc("GET /{$}", s.authed(s.overview))
	s.mux.HandleFunc("GET /brokers", s.authed(s.brokers))
	s.mux.HandleFunc("GET /topics", s.authed(s.topics))
	s.mux.HandleFunc("POST /topics", s.authed(s.writes(s.createTopic)))
	s.mux.HandleFunc("GET /topics/{topic}", s.authed(s.topic))
	s.mux.HandleFunc("POST /topics/{topic}/delete", s.authed(s.writes(s.deleteTopic)))
	s.mux.HandleFunc("POST /topics/{topic}/config", s.authed(s.writes(s.alterConfig)))
	s.mux.HandleFunc("GET /topics/{topic}/messages", s.authed(s.messages))
	s.mux.HandleFunc("GET /topics/{topic}/export", s.authed(s.export))
	s.mux.HandleFunc("GET /topics/{topic}/tail", s.authed(s.tail))
	s.mux.HandleFunc("POST /topics/{topic}/produce", s.authed(s.writes(s.produce)))
	s.mux.HandleFunc("GET /groups", s.authed(s.groups))
	s.mux.HandleFunc("GET /groups/{group}", s.authed(s.group))
	s.mux.HandleFunc("POST /groups/{group}/reset", s.authed(s.writes(s.resetOffsets)))
	s.mux.HandleFunc("GET /transactions", s.authed(s.transactions))
	s.mux.HandleFunc("GET /acls", s.authed(s.acls))
	s.mux.HandleFunc("GET /users", s.authed(s.users))
	s.mux.HandleFunc("GET /quotas", s.authed(s.quotas))
	return s, nil
}

// ServeHTTP serves one console request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && !sameOrigin(r) {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'")
	s.mux.ServeHTTP(w, r)
}

// sameOrigin reports whether a POST comes from the console's own pages:
// a browser names the page's origin in Origin (and Sec-Fetch-Site);
// requests without them (curl, tests) are let through to the CSRF check.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return o == ""
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// page is what every page template gets besides its own data.
type page struct {
	Title    string
	Nav      string
	User     string
	CSRF     string
	ReadOnly bool
	Login    bool
	Data     any
}

// req is one authenticated console request.
type req struct {
	w    http.ResponseWriter
	r    *http.Request
	sess *session
	env  *handler.Env
	be   *backend
}

// authed wraps a page: the session (a login first when one is needed),
// the CSRF check of a POST, and the broker's Env.
func (s *Server) authed(fn func(*req)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.sessions.get(r)
		if sess == nil {
			if s.o.Login {
				if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" {
					http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
				http.Error(w, "log in first", http.StatusUnauthorized)
				return
			}
			sess = s.sessions.create(w, anonymous)
		}
		if r.Method == http.MethodPost {
			// Parsed once here, for the CSRF check and the handler, so
			// that a body too big or malformed is refused, never read
			// as empty fields.
			r.Body = http.MaxBytesReader(w, r.Body, maxProduceBody)
			if err := parseForm(r); err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					http.Error(w, fmt.Sprintf("the form is larger than %d bytes", maxProduceBody), http.StatusRequestEntityTooLarge)
					return
				}
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		if r.Method == http.MethodPost && !sess.checkCSRF(r) {
			http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		var env *handler.Env
		if s.o.Env != nil {
			env = s.o.Env()
		}
		if env == nil {
			http.Error(w, "the broker is still starting", http.StatusServiceUnavailable)
			return
		}
		fn(&req{w: w, r: r, sess: sess, env: env, be: &backend{env: env, principal: sess.principal, host: remoteHost(r)}})
	}
}

// parseForm parses a POST's form, multipart or not.
func parseForm(r *http.Request) error {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return r.ParseMultipartForm(maxProduceBody)
	}
	return r.ParseForm()
}

// render writes page name with data, or a 500 on a template error.
func (s *Server) render(q *req, name, title, nav string, data any) {
	t, ok := s.pages[name]
	if !ok {
		http.Error(q.w, "no page "+name, http.StatusInternalServerError)
		return
	}
	p := page{Title: title, Nav: nav, User: q.sess.principal, CSRF: q.sess.csrf, ReadOnly: s.o.ReadOnly, Login: s.o.Login, Data: data}
	q.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := t.ExecuteTemplate(q.w, "layout", p); err != nil {
		s.o.Log.Error("console: render", "page", name, "err", err)
	}
}

// fail answers a bad request or a failure with its status and message.
func (s *Server) fail(q *req, code int, err error) {
	if code >= 500 {
		s.o.Log.Warn("console: request failed", "path", q.r.URL.Path, "err", err)
	}
	http.Error(q.w, err.Error(), code)
}

// errReadOnly refuses a state change in read-only mode.
var errReadOnly = errors.New("the console is read-only (console.read.only=true)")

// writes guards a state-changing page: refused in read-only mode.
func (s *Server) writes(fn func(*req)) func(*req) {
	return func(q *req) {
		if s.o.ReadOnly {
			s.fail(q, http.StatusForbidden, errReadOnly)
			return
		}
		fn(q)
	}
}

// intParam is query parameter name as an int, def when absent; an error
// names the parameter.
func intParam(r *http.Request, name string, def int64) (int64, error) {
	v := r.FormValue(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", name, v)
	}
	return n, nil
}

var funcs = template.FuncMap{
	"bytes": humanBytes,
	"join":  joinIDs,
	"add":   func(a, b int) int { return a + b },
	"sum":   func(a, b int64) int64 { return a + b },
	"int64": func(a int32) int64 { return int64(a) },
	"words": strings.Fields,
	"inc":   func(a int64) int64 { return a + 1 },
	"off": func(o int64) string {
		if o < 0 {
			return "-"
		}
		return strconv.FormatInt(o, 10)
	},
	"dec": func(a int64) int64 { return a - 1 },
	"b01": b01,
	// flip is the order a column's header link asks: the other order
	// when the list is sorted by that column, else ascending.
	"flip": func(sorted, col, order string) string {
		if sorted == col && order == "asc" {
			return "desc"
		}
		return "asc"
	},
	"time": func(ms int64) string {
		if ms < 0 {
			return "-"
		}
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
	},
	"query": func(kv ...any) template.URL {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(fmt.Sprint(kv[i]), fmt.Sprint(kv[i+1]))
		}
		return template.URL(v.Encode())
	},
}

// b01 is a flag as a query parameter's value: "1" or "".
func b01(b bool) string {
	if b {
		return "1"
	}
	return ""
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func joinIDs(ids []int32) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	return b.String()
}
