package memstore

import (
	"context"
	"fmt"
	"maps"

	"github.com/strata-broker/strata/metadata"
)

// SetBrokerConfigs replaces (or, for none, removes) the dynamic configs of
// broker id or of the cluster default, in one revision.
func (s *Store) SetBrokerConfigs(_ context.Context, id int32, configs map[string]string) (int64, error) {
	op := fmt.Sprintf("set dynamic configs of broker %d", id)
	if err := metadata.CheckConfigEntity(id); err != nil {
		return 0, fmt.Errorf("memstore: %s: %w", op, err)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	ch := metadata.Change{Kind: metadata.ChangeBrokerConfigs, Entity: id}
	if len(configs) == 0 {
		delete(b.brokerConfigs, id)
		ch.Delete = true
	} else {
		ch.Configs = maps.Clone(configs)
		b.brokerConfigs[id] = ch.Configs
	}
	return b.commit(ch), nil
}
