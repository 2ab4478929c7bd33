package compaction

import (
	"math"
	"path/filepath"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/local"
)

// Partition is what compaction needs of a partition served by this
// broker: its current topic configuration (read again on every pass, so
// AlterConfigs changes apply without a restart) and its hot log. The
// broker's *partition.Partition satisfies it.
type Partition interface {
	Config() *config.Topic
	Log() *local.Log
}

// highWatermarker is implemented by partitions that know their high
// watermark (the broker's do): compaction never cleans or deletes records
// at or above it, since a replica may still truncate them.
type highWatermarker interface {
	HighWatermark() int64
}

// highWatermark is p's high watermark, or MaxInt64 when p does not say.
func highWatermark(p Partition) int64 {
	if h, ok := p.(highWatermarker); ok {
		return h.HighWatermark()
	}
	return math.MaxInt64
}

// Source lists the partitions to keep within their policies; it is
// called at the start of every retention pass and cleaner pick.
type Source func() []Partition

// SourceOf adapts a function listing partitions of a concrete type (such
// as partition.Manager.All) to a Source.
func SourceOf[P Partition](all func() []P) Source {
	return func() []Partition {
		ps := all()
		out := make([]Partition, len(ps))
		for i, p := range ps {
			out[i] = p
		}
		return out
	}
}

// name is a partition's name for logging: its log directory's base name,
// <topic>-<partition>.
func name(p Partition) string { return filepath.Base(p.Log().Dir()) }
