package handler

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/strata-broker/strata/metadata"
)

// errPartitionLimit means a placement would put more partition replicas
// on a broker than the limit it registered (POLICY_VIOLATION: the request
// is well-formed, the cluster's policy refuses it; Kafka has no such
// limit, and clients report this code with its message and do not retry).
var errPartitionLimit = errors.New("handler: broker partition limit")

// replicaCounts counts the replicas each broker gets in parts.
func replicaCounts(parts map[int32]metadata.PartitionState) map[int32]int {
	n := map[int32]int{}
	for _, st := range parts {
		for _, r := range st.Replicas {
			n[r]++
		}
	}
	return n
}

// checkPartitionLimits refuses adding[id] more partition replicas on each
// broker id that would then host more than the limit it published in its
// registration (metadata.Broker.MaxPartitions: max.broker.partitions,
// capped by what its open-file limit leaves room for), so that a topic is
// never accepted and then fatal to a broker. Brokers that publish no
// limit are not checked. Placements racing on different brokers may
// together pass a limit; the broker then leaves the partitions beyond it
// offline (partition.ErrPartitionLimit) rather than run out of files.
func (e *Env) checkPartitionLimits(adding map[int32]int) error {
	limits := map[int32]int{}
	for id := range adding {
		if b, ok := e.Cache.Broker(id); ok && b.MaxPartitions > 0 {
			limits[id] = int(b.MaxPartitions)
		}
	}
	if len(limits) == 0 {
		return nil
	}
	hosted := map[int32]int{}
	for _, t := range e.Cache.Topics() {
		for _, st := range t.Partitions {
			for _, r := range st.Replicas {
				hosted[r]++
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(limits)) {
		if total := hosted[id] + adding[id]; total > limits[id] {
			return fmt.Errorf("%w: broker %d would host %d partition replicas (%d now, %d more); its limit is %d "+
				"(max.broker.partitions, capped by what the broker's open-file limit leaves room for: raise ulimit -n, or use more brokers)",
				errPartitionLimit, id, total, hosted[id], adding[id], limits[id])
		}
	}
	return nil
}
