package handler

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/tier/local"
)

// WriteTxnMarkers: v0-1
//
// Behavior:
// * Sent by a transaction coordinator to the leaders of a transaction's
//   partitions (Kafka's ReplicaManager.appendRecords with origin
//   COORDINATOR): each marker's COMMIT or ABORT control batch is appended
//   to each of its partitions this broker leads, at the leader epoch the
//   leadership check saw (NOT_LEADER_OR_FOLLOWER when the partition
//   changed leader or epoch in between, nothing appended). Internal topics
//   take markers too.
// * A partition this broker does not host (or an unknown topic) is
//   UNKNOWN_TOPIC_OR_PARTITION, as Kafka's getMagic check; a follower's
//   NOT_LEADER_OR_FOLLOWER. Both are retriable for the coordinator.
// * The log checks the marker against its producer state first: an older
//   producer epoch is INVALID_PRODUCER_EPOCH, an older coordinator epoch
//   than the last marker of that producer TRANSACTION_COORDINATOR_FENCED;
//   nothing is appended. A marker of a producer the partition has no
//   transaction of is written all the same (Kafka does the same).
// * acks=all: fewer than min.insync.replicas in the ISR is
//   NOT_ENOUGH_REPLICAS (nothing appended); the answer waits until the
//   high watermark passes every marker, off the connection's reading
//   goroutine, for at most markerTimeout (Kafka's request.timeout.ms
//   default), then REQUEST_TIMED_OUT; NOT_ENOUGH_REPLICAS_AFTER_APPEND
//   when the ISR shrank meanwhile.
// * A log that cannot be written is KAFKA_STORAGE_ERROR.
// * A principal without CLUSTER_ACTION on the cluster (brokers have it)
//   is CLUSTER_AUTHORIZATION_FAILED for every partition, as in Kafka.
// * A marker appended to a __consumer_offsets partition completes the
//   producer's transactional offset commits of that partition's groups
//   (Kafka's GroupCoordinator.onTransactionCompleted): COMMIT makes them
//   visible to OffsetFetch, ABORT drops them.
//
// Version notes:
// * v1+: flexible

func handleWriteTxnMarkers(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	denied := !env.allowedCluster(req, aclClusterAction)
	var waits []markerWait
	for mi, rm := range r.Markers {
		sm := kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = rm.ProducerID
		marker := local.TxnMarker{ProducerID: rm.ProducerID, ProducerEpoch: rm.ProducerEpoch,
			CoordinatorEpoch: rm.CoordinatorEpoch, Commit: rm.Committed}
		for ti, rt := range rm.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			t, tok := env.Cache.Topic(rt.Topic)
			for _, idx := range rt.Partitions {
				sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = idx
				if denied {
					sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					st.Partitions = append(st.Partitions, sp)
					continue
				}
				if _, here := env.Partitions.Get(rt.Topic, idx); !here {
					// Kafka's getMagic: no log of the partition here.
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					st.Partitions = append(st.Partitions, sp)
					continue
				}
				p, epoch, code := env.leaderPartition(t, tok, idx, false)
				if code == 0 && int32(len(p.ISR())) < p.Config().MinInsyncReplicas {
					code = kerr.NotEnoughReplicas.Code
				}
				if code == 0 {
					off, err := p.AppendMarker(epoch, marker)
					if code = errorCode(err); code == kerr.UnknownServerError.Code || code == kerr.KafkaStorageError.Code {
						env.Log.Error("write transaction marker", "topic", rt.Topic, "partition", idx, "producer_id", rm.ProducerID, "err", err)
					}
					if err == nil && rt.Topic == group.TopicName && env.Groups != nil {
						env.Groups.CompleteTxn(idx, rm.ProducerID, rm.Committed)
					}
					if err == nil && p.HighWatermark() <= off {
						waits = append(waits, markerWait{p: p, until: off + 1, marker: mi, topic: ti, part: len(st.Partitions)})
					}
				}
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
			}
			sm.Topics = append(sm.Topics, st)
		}
		resp.Markers = append(resp.Markers, sm)
	}
	if len(waits) == 0 {
		return Result{Resp: resp}, nil
	}
	return Result{Later: func(ctx context.Context) Result {
		ps := make([]*partition.Partition, len(waits))
		until := make([]int64, len(waits))
		for i, w := range waits {
			ps[i], until[i] = w.p, w.until
		}
		awaitHighWatermarks(ctx, ps, until, markerTimeout, env.Draining)
		for _, w := range waits {
			resp.Markers[w.marker].Topics[w.topic].Partitions[w.part].ErrorCode = ackError(w.p, w.until)
		}
		return Result{Resp: resp}
	}}, nil
}

// markerTimeout bounds the wait of WriteTxnMarkers for its markers'
// replication: Kafka waits request.timeout.ms, 30 seconds by default.
const markerTimeout = 30 * time.Second

// markerWait is a partition of a WriteTxnMarkers that waits for its high
// watermark to pass the marker; marker, topic and part index the
// response.
type markerWait struct {
	p                   *partition.Partition
	until               int64
	marker, topic, part int
}
