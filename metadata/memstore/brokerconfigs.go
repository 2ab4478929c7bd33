package memstore

import (
	"context"
	"fmt"

	"github.com/strata-broker/strata/metadata"
)

// SetBrokerConfigs replaces (or, for none, removes) the dynamic configs of
// broker id or of the cluster default, in one revision.
func (s *Store) SetBrokerConfigs(_ context.Context, id int32, configs map[string]string) (int64, error) {
	return replaceEntry(s, fmt.Sprintf("set dynamic configs of broker %d", id), metadata.CheckConfigEntity(id), s.b.brokerConfigs, id, configs,
		func(stored map[string]string) metadata.Change {
			return metadata.Change{Kind: metadata.ChangeBrokerConfigs, Entity: id, Configs: stored}
		})
}
