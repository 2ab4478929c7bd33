package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchPartitionBytes is the raw reader's per-partition fetch size
// (fetch.max.partition.bytes in a Kafka consumer); a consumer that reads a
// backlog raises it from the 1 MiB default.
const fetchPartitionBytes = 8 << 20

// fetchVersion is the Fetch version the raw reader speaks (topics by
// name, flexible).
const fetchVersion = 12

// fetchCold reads every partition of topic from offset 0 up to its last
// cold offset with raw Fetch requests over one connection, reading each
// response into one reused buffer and decoding only the framing (the
// records stay bytes), as the raw GET reads into one reused buffer: it
// measures what the broker delivers, not what a client library does with
// it. It returns the time and the record-batch bytes read.
func fetchCold(ctx context.Context, addr, topic string, cs coldSet) (time.Duration, int64, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, 0, fmt.Errorf("tier bench: raw fetch dial: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	next := map[int32]int64{}
	for p, last := range cs.lastOff {
		if last >= 0 {
			next[int32(p)] = 0
		}
	}
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("tier-bench"))
	var out, in []byte
	var n int64
	start := time.Now()
	for corr := int32(0); len(next) > 0; corr++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version = fetchVersion
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 500, 64<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p, off := range next {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, off, fetchPartitionBytes, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		out = fmtr.AppendRequest(out[:0], req, corr)
		if _, err := conn.Write(out); err != nil {
			return 0, 0, fmt.Errorf("tier bench: raw fetch write: %w", err)
		}
		if in, err = readResponse(conn, in); err != nil {
			return 0, 0, err
		}
		// Response header v1: correlation id, tagged fields (none).
		if len(in) < 5 || int32(binary.BigEndian.Uint32(in)) != corr {
			return 0, 0, fmt.Errorf("tier bench: raw fetch: bad response header")
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = fetchVersion
		if err := resp.ReadFrom(in[5:]); err != nil {
			return 0, 0, fmt.Errorf("tier bench: raw fetch response: %w", err)
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

// readResponse reads one size-prefixed response into buf (grown when too
// small) and returns it.
func readResponse(r io.Reader, buf []byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return buf, fmt.Errorf("tier bench: raw fetch read: %w", err)
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf, fmt.Errorf("tier bench: raw fetch read: %w", err)
	}
	return buf, nil
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
