package handler

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/test/tmpfs"
	"github.com/strata-broker/strata/tier/record"
)

type produceRow = apiRow[*kmsg.ProduceResponse]

func TestProduce(t *testing.T) {
	runRows(t, tableOpts{}, produceRows())
}

// rf2 is partition 0 of topic t led here and replicated to broker 2,
// both in the ISR; nothing replicates it, so its high watermark moves
// only with the fetches a row makes as broker 2.
func rf2(configs map[string]string) step {
	return steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {1, 2}}, configs))
}

func produceRows() []produceRow {
	return []produceRow{
		{
			name:  "appends at offset 0",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "t", 0, batch("a", "b")) },
			want: checks(wantProduced(0, 0), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 2),
				func(t *testing.T, s *scene, resp *kmsg.ProduceResponse) {
					sp := producePart(t, resp)
					if sp.LogAppendTime != -1 {
						t.Errorf("log append time %d on a CreateTime topic, want -1", sp.LogAppendTime)
					}
					if s.version >= 5 && sp.LogStartOffset != 0 {
						t.Errorf("log start offset %d, want 0", sp.LogStartOffset)
					}
				}),
		},
		{
			name:  "next batch follows the log end",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a", "b"), batch("c"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "t", 0, batch("d")) },
			want:  checks(wantProduced(0, 3), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 4)),
		},
		{
			name:  "partitions answer independently",
			setup: withTopic("t", 2, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := produceReq(s, 1, "t", 0, batch("a"))
				for _, idx := range []int32{1, 7} {
					rp := kmsg.NewProduceRequestTopicPartition()
					rp.Partition, rp.Records = idx, batch("b")
					req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
				}
				return req
			},
			want: func(t *testing.T, s *scene, resp *kmsg.ProduceResponse) {
				got := map[int32]int16{}
				for _, sp := range resp.Topics[0].Partitions {
					got[sp.Partition] = sp.ErrorCode
				}
				want := map[int32]int16{0: 0, 1: 0, 7: kerr.UnknownTopicOrPartition.Code}
				if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[7] != want[7] {
					t.Errorf("error codes by partition %v, want %v", got, want)
				}
			},
		},
		{
			name:  "acks=1 and acks=all on a single replica answer at once",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, batch("a")) },
			want:  checks(wantProduced(0, 0), wantTook[*kmsg.ProduceResponse](0)),
		},
		{
			name:  "acks=0 sends no answer",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 0, "t", 0, batch("a")) },
			want: checks(func(t *testing.T, s *scene, resp *kmsg.ProduceResponse) {
				if resp != nil {
					t.Errorf("acks=0 answered %+v", resp)
				}
			}, wantLogEnd[*kmsg.ProduceResponse]("t", 0, 1)),
		},
		{
			// Kafka closes the connection so that the producer, which waits for
			// no answer, notices and refreshes its metadata.
			name:   "acks=0 with an error closes the connection",
			setup:  withTopic("t", 1, nil),
			req:    func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 0, "t", 3, batch("a")) },
			closes: true,
		},
		{
			name:  "acks other than -1 0 and 1",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 2, "t", 0, batch("a")) },
			want:  checks(wantProduced(kerr.InvalidRequiredAcks.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:     "unknown topic",
			versions: versionsFrom(kmsg.Produce, 0),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "nope", 0, batch("a")) },
			want: func(t *testing.T, s *scene, resp *kmsg.ProduceResponse) {
				wantProduced(unknownTopic(s, 13), -1)(t, s, resp)
			},
		},
		{
			name:  "unknown partition",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "t", 1, batch("a")) },
			want:  wantProduced(kerr.UnknownTopicOrPartition.Code, -1),
		},
		{
			name:  "follower",
			setup: steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2, 1}}, nil)),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "t", 0, batch("a")) },
			want:  checks(wantProduced(kerr.NotLeaderForPartition.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "not a replica",
			setup: steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2}}, nil)),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "t", 0, batch("a")) },
			want:  wantProduced(kerr.NotLeaderForPartition.Code, -1),
		},
		{
			name:  "two batches in one partition",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, "t", 0, slices.Concat(batch("a"), batch("b")))
			},
			want: checks(wantProduced(kerr.InvalidRecord.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "magic 1 message set",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, "t", 0, messageV1(strings.Repeat("v", 40)))
			},
			want: checks(wantProduced(kerr.InvalidRecord.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "magic 1 message set shorter than a v2 header",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, "t", 0, messageV1("v"))
			},
			want: checks(wantProduced(kerr.InvalidRecord.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "batch cut short of its length field",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				b := batch("a")
				return produceReq(s, 1, "t", 0, b[:len(b)-1])
			},
			want: checks(wantProduced(kerr.InvalidRecord.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "CRC mismatch",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				b := batch("a")
				b[len(b)-1] ^= 0xff
				return produceReq(s, 1, "t", 0, b)
			},
			want: checks(wantProduced(kerr.CorruptMessage.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "record count disagrees with the offset range",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				b := batch("a", "b")
				binary.BigEndian.PutUint32(b[57:], 3) // numRecords
				return produceReq(s, 1, "t", 0, withCRC(b))
			},
			want: checks(wantProduced(kerr.InvalidRecord.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "control batch from a client",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, "t", 0, record.NewBatch(record.BuildOptions{Control: true, FirstTimestamp: t0},
					record.Record{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}))
			},
			want: wantProduced(kerr.InvalidRecord.Code, -1),
		},
		{
			name:     "zstd before v7",
			versions: versionsTo(kmsg.Produce, 6),
			setup:    withTopic("t", 1, nil),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "t", 0, zstdBatch) },
			want:     checks(wantProduced(kerr.UnsupportedCompressionType.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:     "zstd from v7",
			versions: []int16{7, 13},
			setup:    withTopic("t", 1, nil),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "t", 0, zstdBatch) },
			want:     wantProduced(0, 0),
		},
		{
			name:  "batch larger than max.message.bytes",
			setup: withTopic("t", 1, map[string]string{"max.message.bytes": "100"}),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, "t", 0, batch(strings.Repeat("v", 100)))
			},
			want: checks(wantProduced(kerr.MessageTooLarge.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "null key on a compacted topic",
			setup: withTopic("t", 1, map[string]string{"cleanup.policy": "compact"}),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "t", 0, batch("a")) },
			want:  checks(wantProduced(kerr.InvalidRecord.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "keyed records on a compacted topic",
			setup: withTopic("t", 1, map[string]string{"cleanup.policy": "compact"}),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, "t", 0, keyedBatch("k", "v"))
			},
			want: wantProduced(0, 0),
		},
		{
			name:  "LogAppendTime stamps the broker's clock",
			setup: withTopic("t", 1, map[string]string{"message.timestamp.type": "LogAppendTime"}),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, "t", 0, batchAt(t0-time.Hour.Milliseconds(), "a"))
			},
			want: checks(wantProduced(0, 0), func(t *testing.T, s *scene, resp *kmsg.ProduceResponse) {
				if got, now := producePart(t, resp).LogAppendTime, time.Now().UnixMilli(); got != now {
					t.Errorf("log append time %d, want the broker's clock %d", got, now)
				}
			}),
		},
		{
			// As Kafka 3.x by default (message.timestamp.*.max.ms unbounded).
			name:  "CreateTime keeps any producer timestamp",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, "t", 0, batchAt(t0+365*24*time.Hour.Milliseconds(), "a"))
			},
			want: wantProduced(0, 0),
		},
		{
			// Kafka rejects client writes to its internal topics (Topic.isInternal).
			name:  "internal topic",
			scene: sceneOpts{config: map[string]string{"offsets.topic.num.partitions": "1"}},
			setup: withOffsetsTopic,
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, group.TopicName, 0, keyedBatch("k", "v"))
			},
			want: checks(wantProduced(kerr.InvalidTopicException.Code, -1), wantLogEnd[*kmsg.ProduceResponse](group.TopicName, 0, 0),
				func(t *testing.T, s *scene, resp *kmsg.ProduceResponse) {
					// Kafka's InvalidTopicException text (ReplicaManager.appendToLocalLog).
					if msg := producePart(t, resp).ErrorMessage; s.version >= 8 && (msg == nil || *msg != "Cannot append to internal topic "+group.TopicName) {
						t.Errorf("error message %v, want Kafka's", msgString(msg))
					}
				}),
		},
		{
			// Kafka's exception for its own admin tools (AdminUtils.ADMIN_CLIENT_ID).
			name:  "internal topic from the admin client id",
			scene: sceneOpts{config: map[string]string{"offsets.topic.num.partitions": "1"}},
			setup: steps(withOffsetsTopic, func(t *testing.T, s *scene) {
				s.clientID = "__admin_client"
			}),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, 1, group.TopicName, 0, keyedBatch("k", "v"))
			},
			want: wantProduced(0, 0),
		},

		// Idempotent producers.
		{
			name:  "idempotent first batch",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, idemBatch(7, 0, 0, "a")) },
			want:  wantProduced(0, 0),
		},
		{
			name:  "retried batch gets its first offsets back",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, idemBatch(7, 0, 0, "a"), idemBatch(7, 0, 1, "b", "c"), idemBatch(7, 0, 3, "d"))),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return produceReq(s, -1, "t", 0, idemBatch(7, 0, 1, "b", "c"))
			},
			want: checks(wantProduced(0, 1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 4)),
		},
		{
			name:  "sequence gap",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, idemBatch(7, 0, 0, "a"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, idemBatch(7, 0, 2, "c")) },
			want:  checks(wantProduced(kerr.OutOfOrderSequenceNumber.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 1)),
		},
		{
			// Only the last five batches of a producer are remembered (Kafka's
			// ProducerStateEntry): an older retry is out of order.
			name: "retry older than the five remembered batches",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0,
				idemBatch(7, 0, 0, "a"), idemBatch(7, 0, 1, "b"), idemBatch(7, 0, 2, "c"),
				idemBatch(7, 0, 3, "d"), idemBatch(7, 0, 4, "e"), idemBatch(7, 0, 5, "f"))),
			req:  func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, idemBatch(7, 0, 0, "a")) },
			want: checks(wantProduced(kerr.OutOfOrderSequenceNumber.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 6)),
		},
		{
			name:  "epoch older than the producer's",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, idemBatch(7, 1, 0, "a"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, idemBatch(7, 0, 1, "b")) },
			want:  checks(wantProduced(kerr.InvalidProducerEpoch.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 1)),
		},
		{
			name:  "new epoch starts at sequence 0",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, idemBatch(7, 0, 0, "a"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, idemBatch(7, 1, 0, "b")) },
			want:  wantProduced(0, 1),
		},
		{
			name:  "new epoch at a later sequence",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, idemBatch(7, 0, 0, "a"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, idemBatch(7, 1, 5, "b")) },
			want:  wantProduced(kerr.OutOfOrderSequenceNumber.Code, -1),
		},
		{
			// KIP-360: the producer may have expired from the state.
			name:  "unknown producer at any sequence",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, idemBatch(7, 0, 42, "a")) },
			want:  wantProduced(0, 0),
		},
		{
			name:  "producer id without a sequence",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, idemBatch(7, 0, -1, "a")) },
			want:  wantProduced(kerr.InvalidRecord.Code, -1),
		},

		// acks=all.
		{
			name:  "acks=all below min.insync.replicas",
			setup: withTopic("t", 1, map[string]string{"min.insync.replicas": "2"}),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, batch("a")) },
			want:  checks(wantProduced(kerr.NotEnoughReplicas.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
		{
			name:  "acks=1 does not wait for the follower",
			setup: rf2(nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, 1, "t", 0, batch("a")) },
			want:  checks(wantProduced(0, 0), wantTook[*kmsg.ProduceResponse](0)),
		},
		{
			name:  "acks=all completes when the follower has the batch",
			setup: rf2(nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, batch("a")) },
			during: func(t *testing.T, s *scene) {
				s.followerFetch(t, 2, "t", 0, 1)
			},
			want: checks(wantProduced(0, 0), wantTook[*kmsg.ProduceResponse](0)),
		},
		{
			name:  "acks=all times out",
			setup: rf2(nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, batch("a")) },
			want: checks(wantProduced(kerr.RequestTimedOut.Code, -1), wantTook[*kmsg.ProduceResponse](produceTimeout),
				wantLogEnd[*kmsg.ProduceResponse]("t", 0, 1)),
		},
		{
			name:  "acks=all after the ISR shrank below min.insync.replicas",
			setup: rf2(map[string]string{"min.insync.replicas": "2"}),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, batch("a")) },
			during: func(t *testing.T, s *scene) {
				s.setState(t, "t", 0, func(st *metadata.PartitionState) { st.ISR = []int32{1} })
			},
			want: checks(wantProduced(kerr.NotEnoughReplicasAfterAppend.Code, -1), wantTook[*kmsg.ProduceResponse](0)),
		},
		{
			name:  "acks=all when the leadership moves away",
			setup: rf2(nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return produceReq(s, -1, "t", 0, batch("a")) },
			during: func(t *testing.T, s *scene) {
				s.setState(t, "t", 0, func(st *metadata.PartitionState) { st.Leader, st.LeaderEpoch = 2, st.LeaderEpoch+1 })
			},
			want: checks(wantProduced(kerr.NotLeaderForPartition.Code, -1), wantTook[*kmsg.ProduceResponse](0)),
		},
	}
}

// produceTimeout is the timeout of the produce requests of the table.
const produceTimeout = 5 * time.Second

// produceReq produces records to one partition of topic (by name and by
// id, as the version asks) with acks.
func produceReq(s *scene, acks int16, topic string, idx int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = int32(produceTimeout.Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, s.topicID(topic)
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = idx, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// producePart is the answer for the one partition of a produce.
func producePart(t *testing.T, resp *kmsg.ProduceResponse) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	if resp == nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v, want one partition", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// wantProduced checks the one partition's error code and base offset.
func wantProduced(code int16, base int64) check[*kmsg.ProduceResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.ProduceResponse) {
		t.Helper()
		sp := producePart(t, resp)
		if sp.ErrorCode != code || code == 0 && sp.BaseOffset != base {
			t.Errorf("error %d (%v), base offset %d; want error %d, base offset %d", sp.ErrorCode, sp.ErrorMessage, sp.BaseOffset, code, base)
		}
	}
}

// wantTook checks how long the request took on the bubble's clock.
func wantTook[Resp any](d time.Duration) check[Resp] {
	return func(t *testing.T, s *scene, _ Resp) {
		t.Helper()
		if s.took != d {
			t.Errorf("answered after %v, want %v", s.took, d)
		}
	}
}

// withOffsetsTopic creates __consumer_offsets, led here.
func withOffsetsTopic(t *testing.T, s *scene) {
	t.Helper()
	if _, err := s.env.offsetsTopic(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// zstdBatch is a zstd-compressed batch, made outside any synctest bubble:
// the compressor's goroutines must not belong to one.
var zstdBatch = batchWith(record.BuildOptions{Codec: record.Zstd}, "a")

// idemBatch is an idempotent producer's batch.
func idemBatch(pid int64, epoch int16, seq int32, values ...string) record.Batch {
	return batchWith(record.BuildOptions{Idempotent: true, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, values...)
}

// withCRC recomputes the CRC-32C of a batch whose header was changed.
func withCRC(b record.Batch) record.Batch {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// messageV1 is a magic 1 message set of one message (pre-0.11 format).
func messageV1(value string) []byte {
	msg := []byte{1, 0}                                  // magic, attributes
	msg = binary.BigEndian.AppendUint64(msg, 0)          // timestamp
	msg = binary.BigEndian.AppendUint32(msg, ^uint32(0)) // null key
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(value)))
	msg = append(msg, value...)
	out := binary.BigEndian.AppendUint64(nil, 0) // offset
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(msg)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(msg))
	return append(out, msg...)
}

// TestProduceOnFullDisk: on a full disk (a real tmpfs) a produce is
// KAFKA_STORAGE_ERROR naming the lack of space, nothing is appended, what
// is stored stays readable, and once space is freed produces succeed
// again, without a restart.
func TestProduceOnFullDisk(t *testing.T) {
	mnt := tmpfs.Mount(t, 4<<20)
	filler := filepath.Join(mnt, "filler")
	b := newTestBroker(t, brokerOpts{config: map[string]string{"log.dirs": filepath.Join(mnt, "logs")}})
	b.createTopic(t, "t", 1, nil)
	s := &scene{testBroker: b, version: 9}
	produce := func(values ...string) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := produceReq(s, 1, "t", 0, batch(values...))
		req.SetVersion(9)
		return producePart(t, b.do(t, req).(*kmsg.ProduceResponse))
	}
	if sp := produce("before"); sp.ErrorCode != 0 {
		t.Fatalf("produce before the disk filled: error %d %v", sp.ErrorCode, msgString(sp.ErrorMessage))
	}
	tmpfs.Fill(t, filler, 8<<20)
	big := strings.Repeat("x", 64<<10)
	sp := produce(big)
	if sp.ErrorCode != kerr.KafkaStorageError.Code || sp.ErrorMessage == nil || !strings.Contains(*sp.ErrorMessage, "no space left on device") {
		t.Fatalf("produce on a full disk: error %d %v, want KAFKA_STORAGE_ERROR naming the lack of space", sp.ErrorCode, msgString(sp.ErrorMessage))
	}
	fetch := func() []string {
		req := fetchReq(s, fetchAt{"t", 0, 0})
		req.SetVersion(12)
		_, values := mustRecords(t, fetchParts(t, b.do(t, req).(*kmsg.FetchResponse))[0].RecordBatches)
		return values
	}
	if got := fetch(); !slices.Equal(got, []string{"before"}) {
		t.Fatalf("fetched %q on a full disk, want the record stored before", got)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if sp := produce(big); sp.ErrorCode != 0 || sp.BaseOffset != 1 {
		t.Fatalf("produce after freeing space: error %d %v at %d, want offset 1", sp.ErrorCode, msgString(sp.ErrorMessage), sp.BaseOffset)
	}
}
