package partition

import (
	"errors"
	"fmt"
	"math"

	"github.com/strata-broker/strata/config"
)

// ErrPartitionLimit: opening one more partition would exceed the broker's
// partition limit (Budget.MaxPartitions).
var ErrPartitionLimit = errors.New("partition: partition limit reached")

// FilesPerPartition is what a partition costs of the open-file limit: its
// active segment's .log file, and room for a just-rolled segment's until
// the flusher synced it and for the index, checkpoint and snapshot files
// a log writes briefly.
const FilesPerPartition = 2

// Budget shares the broker's open-file limit (RLIMIT_NOFILE) between a
// reserve for connections, the metadata store and files held briefly (a
// quarter of the limit), the cache of sealed segments' files
// (log.segment.open.files.max, by default another quarter) and the
// partitions, at FilesPerPartition each. max.broker.partitions can only
// lower the result: a request that would need more descriptors than the
// limit has is refused, never accepted and then fatal.
type Budget struct {
	// OpenFiles is the open-file limit the budget shares; 0 when unknown
	// (then only max.broker.partitions limits the partitions).
	OpenFiles int64
	// Reserve is what is left for connections and everything else.
	Reserve int64
	// SegmentFiles bounds the open files of sealed segments.
	SegmentFiles int
	// MaxPartitions is the most partition replicas the broker hosts.
	MaxPartitions int32
	// FilesAllow is how many partitions the open-file limit alone leaves
	// room for (MaxInt32 when unknown).
	FilesAllow int32
}

// defaultSegmentFiles bounds the sealed segments' open files when the
// open-file limit is unknown and log.segment.open.files.max is not set.
const defaultSegmentFiles = 1024

// minReserve is the least the reserve keeps, however low the limit.
const minReserve = 64

// NewBudget shares openFiles (0: unknown) as the Budget doc says.
func NewBudget(cfg *config.Broker, openFiles uint64) Budget {
	b := Budget{SegmentFiles: int(cfg.LogSegmentOpenFilesMax), FilesAllow: math.MaxInt32}
	if openFiles == 0 {
		if b.SegmentFiles == 0 {
			b.SegmentFiles = defaultSegmentFiles
		}
		b.MaxPartitions = max(cfg.MaxBrokerPartitions, 1)
		return b
	}
	b.OpenFiles = int64(min(openFiles, math.MaxInt32)) // an unlimited limit is still bounded by the kernel's nr_open
	b.Reserve = max(b.OpenFiles/4, minReserve)
	if b.SegmentFiles == 0 {
		b.SegmentFiles = int(max(b.OpenFiles/4, 1))
	}
	room := max(b.OpenFiles-b.Reserve-int64(b.SegmentFiles), 0) / FilesPerPartition
	b.FilesAllow = int32(min(room, math.MaxInt32))
	// A broker that can host nothing is no use; one partition is assumed
	// to fit whatever the arithmetic says (Describe warns).
	b.MaxPartitions = max(min(cfg.MaxBrokerPartitions, b.FilesAllow), 1)
	return b
}

// BudgetFor is NewBudget for the process's open-file limit now (its soft
// limit, which Go raises to the hard limit at start).
func BudgetFor(cfg *config.Broker) Budget { return NewBudget(cfg, openFileLimit()) }

// Describe says how the budget came about, for the start-up log and for
// error messages.
func (b Budget) Describe() string {
	if b.OpenFiles == 0 {
		return fmt.Sprintf("at most %d partitions (max.broker.partitions; open-file limit unknown), %d sealed segment files (log.segment.open.files.max)",
			b.MaxPartitions, b.SegmentFiles)
	}
	return fmt.Sprintf("at most %d partitions (max.broker.partitions, or %d descriptors each of what the open-file limit %d leaves after %d for connections and %d for sealed segment files, log.segment.open.files.max: room for %d)",
		b.MaxPartitions, FilesPerPartition, b.OpenFiles, b.Reserve, b.SegmentFiles, b.FilesAllow)
}
