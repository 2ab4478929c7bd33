package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// fetchPartitionBytes is the raw reader's per-partition fetch size
// (fetch.max.partition.bytes in a Kafka consumer); a consumer that reads a
// backlog raises it from the 1 MiB default.
const fetchPartitionBytes = 8 << 20

// fetchCold reads every partition of topic from offset 0 up to its last
// cold offset with plain Fetch requests, one in flight, counting the
// record-batch bytes without decoding the records: the broker's cold path
// alone, as a raw GET is the bucket's. It returns the wall time and the
// bytes read.
func fetchCold(ctx context.Context, addr, topic string, cs coldSet) (time.Duration, int64, error) {
	// Kafka 3.0's versions: Fetch v12, which names topics (v13 uses ids).
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		return 0, 0, fmt.Errorf("tier bench: raw fetch client: %w", err)
	}
	defer cl.Close()
	next := map[int32]int64{}
	for p, last := range cs.lastOff {
		if last >= 0 {
			next[int32(p)] = 0
		}
	}
	var n int64
	start := time.Now()
	for len(next) > 0 {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 500, 64<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p, off := range next {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, off, fetchPartitionBytes, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, 0, fmt.Errorf("tier bench: raw fetch: %w", err)
		}
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return 0, 0, fmt.Errorf("tier bench: raw fetch of partition %d: %w", rp.Partition, err)
				}
				last, size := lastOffset(rp.RecordBatches)
				if size == 0 {
					continue
				}
				n += size
				next[rp.Partition] = last + 1
				if last >= cs.lastOff[rp.Partition] {
					delete(next, rp.Partition)
				}
			}
		}
	}
	return time.Since(start), n, nil
}

// lastOffset walks the whole batches of a fetched partition: the last
// offset and the bytes they take (a trailing partial batch is not counted).
func lastOffset(b []byte) (last, size int64) {
	last = -1
	for len(b) >= 61 {
		n := int64(binary.BigEndian.Uint32(b[8:12])) + 12
		if n > int64(len(b)) {
			break
		}
		last = int64(binary.BigEndian.Uint64(b[0:8])) + int64(binary.BigEndian.Uint32(b[23:27]))
		size += n
		b = b[n:]
	}
	return last, size
}
