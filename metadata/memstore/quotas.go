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
	op := fmt.Sprintf("set client quotas of %s", entity)
	if err := entity.Validate(); err != nil {
		return 0, fmt.Errorf("memstore: %s: %w", op, err)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	ch := metadata.Change{Kind: metadata.ChangeClientQuotas, Quota: entity}
	if len(values) == 0 {
		delete(b.quotas, entity)
		ch.Delete = true
	} else {
		ch.Quotas = maps.Clone(values)
		b.quotas[entity] = ch.Quotas
	}
	return b.commit(ch), nil
}
