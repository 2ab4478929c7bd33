package remote

import (
	"context"
	"errors"

	"github.com/strata-broker/strata/metadata"
)

// ProducerSnapshot returns the producer snapshot the tier holds at offset:
// the one copied with the finished copy that ends just below offset
// (empty when that copy had none, or no copy ends there; an error when the
// metadata cannot be loaded to tell). A replica that
// starts its log at offset, skipping the tier, loads it to keep the
// idempotent producers' state.
func (r *Reader) ProducerSnapshot(ctx context.Context, id metadata.TopicID, partition int32, offset int64) ([]byte, error) {
	seg, err := r.Locate(ctx, id, partition, offset-1)
	switch {
	case errors.Is(err, ErrNotTiered):
		return nil, nil
	case err != nil:
		return nil, err
	case seg.EndOffset != offset-1:
		return nil, nil
	}
	return r.indexFile(ctx, seg, ".producers")
}
