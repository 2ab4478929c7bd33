package remote

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/objstore"
)

// Sweeper removes the remote data of deleted topics: every object under
// "<topic>-<topicID hex>/" and every remote-segment record of the id.
// Every broker may run one; they race safely because each step is
// idempotent (deleting a missing object or record is not an error). A
// marker is forgotten only after a sweep found the prefix empty at least
// the manager's orphan grace after this sweeper first saw it, so objects
// a copy in flight at deletion time uploads late are still removed. (A
// late copy cannot record them: the metadata store refuses remote-segment
// writes while the marker exists.)
//
// Concurrency: RunOnce and Run belong to one goroutine; the manager's
// metadata view is touched only under Manager.mu.
type Sweeper struct {
	m    *Manager
	meta metadata.DeletedTopics
	seen map[metadata.TopicID]time.Time // first sweep of each marker
}

// NewSweeper returns a sweeper over m's object store and meta.
func NewSweeper(m *Manager, meta metadata.DeletedTopics) *Sweeper {
	return &Sweeper{m: m, meta: meta, seen: map[metadata.TopicID]time.Time{}}
}

// Run sweeps every task interval until ctx is done.
func (s *Sweeper) Run(ctx context.Context) {
	t := time.NewTicker(s.m.opts.Interval)
	defer t.Stop()
	for {
		if err := s.RunOnce(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, metadata.ErrUnavailable) {
			s.m.log.Warn("remote: deleted-topic sweep failed; retrying next interval", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunOnce sweeps every deleted-topic marker once. Topics this broker still
// holds a replica of are left for a later pass (the partition manager
// removes the replica first).
func (s *Sweeper) RunOnce(ctx context.Context) error {
	ids, topics, err := s.meta.ListDeletedTopics(ctx)
	if err != nil {
		return fmt.Errorf("remote: sweep deleted topics: %w", err)
	}
	held := map[metadata.TopicID]bool{}
	for _, pi := range s.m.src() {
		held[pi.TopicID] = true
	}
	var errs []error
	for i, id := range ids {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if held[id] {
			continue
		}
		if err := s.sweep(ctx, id, topics[i]); err != nil {
			errs = append(errs, err)
		}
	}
	for id := range s.seen {
		if !slices.Contains(ids, id) {
			delete(s.seen, id) // another broker finished it
		}
	}
	return errors.Join(errs...)
}

// sweep deletes one deleted topic's objects and records and forgets its
// marker once the grace has passed with nothing left to delete.
func (s *Sweeper) sweep(ctx context.Context, id metadata.TopicID, topic string) error {
	now := s.m.opts.Now()
	first, ok := s.seen[id]
	if !ok {
		first, s.seen[id] = now, now
	}
	prefix := topic + "-" + hex.EncodeToString(id[:]) + "/"
	n, err := deletePrefix(ctx, s.m.store, prefix)
	if err != nil {
		return fmt.Errorf("remote: delete objects of deleted topic %s: %w", topic, err)
	}
	if err := s.meta.DeleteRemoteTopic(ctx, id); err != nil {
		return err
	}
	s.m.forgetTopic(id)
	if n > 0 {
		s.m.log.Info("remote: deleted objects of deleted topic", "topic", topic, "topic_id", hex.EncodeToString(id[:]), "objects", n)
	}
	if n > 0 || now.Sub(first) < s.m.opts.OrphanGrace {
		return nil
	}
	if err := s.meta.ForgetDeletedTopic(ctx, id); err != nil {
		return err
	}
	delete(s.seen, id)
	s.m.log.Info("remote: remote data of deleted topic removed", "topic", topic, "topic_id", hex.EncodeToString(id[:]))
	return nil
}

// deletePrefix deletes every object under prefix and returns how many it
// deleted; objects already gone are not an error.
func deletePrefix(ctx context.Context, store objstore.ObjectStore, prefix string) (int, error) {
	var keys []string
	for obj, err := range store.List(ctx, prefix) {
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", prefix, err)
		}
		keys = append(keys, obj.Key)
	}
	for _, k := range keys {
		if err := store.Delete(ctx, k); err != nil && !errors.Is(err, objstore.ErrNotExist) {
			return 0, fmt.Errorf("delete %s: %w", k, err)
		}
	}
	return len(keys), nil
}

// forgetTopic drops the cached metadata of every partition of id.
func (m *Manager) forgetTopic(id metadata.TopicID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.parts {
		if k.id == id {
			delete(m.parts, k)
		}
	}
}
