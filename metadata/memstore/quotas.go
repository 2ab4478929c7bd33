package memstore

import (
	"context"
	"fmt"
	"maps"

	"github.com/strata-broker/strata/metadata"
)

// SetClientQuotas replaces (or, for none, removes) entity's quota values,
// in one revision.
func (s *Store) SetClientQuotas(_ context.Context, entity metadata.QuotaEntity, values map[string]float64) (int64, error) {
	return replaceEntry(s, fmt.Sprintf("set client quotas of %s", entity), entity.Validate(), s.b.quotas, entity, values,
		func(stored map[string]float64) metadata.Change {
			return metadata.Change{Kind: metadata.ChangeClientQuotas, Quota: entity, Quotas: stored}
		})
}

// replaceEntry is what the setters of a map of values by key share: when
// invalid (key's validation error) is nil and the store is open, it
// stores a copy of values under key in entries, or removes key for none,
// and commits the change that change makes of the stored copy (nil for a
// removal, which the change is marked as), in one revision; op names the
// operation in errors.
func replaceEntry[K comparable, V any](s *Store, op string, invalid error, entries map[K]map[string]V, key K, values map[string]V,
	change func(stored map[string]V) metadata.Change) (int64, error) {
	if invalid != nil {
		return 0, fmt.Errorf("memstore: %s: %w", op, invalid)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	var stored map[string]V
	if len(values) == 0 {
		delete(entries, key)
	} else {
		stored = maps.Clone(values)
		entries[key] = stored
	}
	ch := change(stored)
	ch.Delete = stored == nil
	return b.commit(ch), nil
}
