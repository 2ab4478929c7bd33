package security

import (
	"log/slog"
	"os"
	"sync"
	"time"
)

// reloadCheck is how often, at most, a handshake checks whether the key
// store and trust store files changed.
var reloadCheck = 2 * time.Second

// stamp is what tells a file changed: its size and modification time.
type stamp struct {
	size  int64
	mtime time.Time
}

// reloading is material loaded from files (none for inline PEM) and
// loaded again when one of them changes.
type reloading[T any] struct {
	what  string // for logs: "ssl.keystore.location /path"
	files []string
	load  func() (T, error)
	log   *slog.Logger

	mu      sync.Mutex
	checked time.Time
	stamps  []stamp
	val     T
}

// newReloading loads the material once; a failure is the caller's error.
func newReloading[T any](what string, files []string, load func() (T, error), log *slog.Logger) (*reloading[T], error) {
	r := &reloading[T]{what: what, files: files, load: load, log: log}
	r.stamps = r.stat()
	v, err := load()
	if err != nil {
		return nil, err
	}
	r.val, r.checked = v, time.Now()
	return r, nil
}

func (r *reloading[T]) stat() []stamp {
	out := make([]stamp, len(r.files))
	for i, f := range r.files {
		if fi, err := os.Stat(f); err == nil {
			out[i] = stamp{fi.Size(), fi.ModTime()}
		}
	}
	return out
}

// get returns the material, loading it again first if reloadCheck passed
// since the last check and a file changed. A load that fails is logged
// and the last good material returned; it is tried again at the next
// change.
func (r *reloading[T]) get() T {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.files) == 0 || time.Since(r.checked) < reloadCheck {
		return r.val
	}
	r.checked = time.Now()
	now := r.stat()
	changed := false
	for i := range now {
		changed = changed || now[i] != r.stamps[i]
	}
	if !changed {
		return r.val
	}
	r.stamps = now
	v, err := r.load()
	if err != nil {
		r.log.Error("TLS material changed but does not load; keeping the previous one", "source", r.what, "err", err)
		return r.val
	}
	r.val = v
	r.log.Info("TLS material reloaded", "source", r.what)
	return r.val
}
