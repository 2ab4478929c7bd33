package memstore

import (
	"fmt"

	"github.com/strata-broker/strata/metadata"
)

// Store is one handle on a Backend, with its own Cache: what
// etcdstore.Store is to etcd. It implements metadata.Store.
type Store struct {
	b     *Backend
	cache *metadata.Cache
	done  chan struct{} // closed by Close

	// Guarded by b.mu:
	closed bool
	regs   map[*registration]struct{} // open registrations
	cands  map[*candidate]struct{}    // candidacies not yet ended
}

var _ metadata.Store = (*Store)(nil)

// Backend is the state this handle works on; tests use its fault hooks.
func (s *Store) Backend() *Backend { return s.b }

// ClusterID is the backend's cluster id (22 base64url characters).
func (s *Store) ClusterID() string { return s.b.clusterID }

// Cache is this handle's view, fed by every write to the backend.
func (s *Store) Cache() *metadata.Cache { return s.cache }

// Close withdraws the handle's registrations, ends its election sessions
// (their terms end with metadata.ErrSessionLost), stops its controller
// watches and closes its cache. Idempotent.
func (s *Store) Close() error {
	b := s.b
	b.mu.Lock()
	if s.closed {
		b.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for r := range s.regs {
		b.endRegistration(r, false)
	}
	for c := range s.cands {
		b.endCandidate(c, errStoreClosed)
	}
	delete(b.handles, s)
	b.mu.Unlock()
	s.cache.Close()
	return nil
}

// checkOpen fails once the handle is closed. b.mu must be held.
func (s *Store) checkOpen(op string) error {
	if s.closed {
		return fmt.Errorf("memstore: %s: %w", op, metadata.ErrClosed)
	}
	return nil
}
