package remote

import (
	"context"

	"github.com/strata-broker/strata/metadata"
)

// ProducerSnapshot returns the producer snapshot the tier holds at offset:
// the one copied with the finished copy that ends just below offset
// (empty when that copy had none, or no copy ends there). A replica that
// starts its log at offset, skipping the tier, loads it to keep the
// idempotent producers' state.
func (r *Reader) ProducerSnapshot(ctx context.Context, id metadata.TopicID, partition int32, offset int64) ([]byte, error) {
	seg, ok := r.locate(id, partition, offset-1)
	if !ok || seg.EndOffset != offset-1 {
		return nil, nil
	}
	return r.indexFile(ctx, seg, ".producers")
}
