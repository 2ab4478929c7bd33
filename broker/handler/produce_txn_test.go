package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
)

// TestProduceVerification: KIP-890. A transactional produce to a
// partition the coordinator has not added to the producer's transaction
// is refused and appends nothing (part 1), so no hanging transaction can
// form; from produce v12 (transaction version 2) the leader adds the
// partition itself (part 2). The answers follow Kafka's
// AddPartitionsToTxnManager and ReplicaManager.
func TestProduceVerification(t *testing.T) {
	ready := steps(withTopic("t", 1, nil), withTxnCoordinator)
	// produce initialises "tx" unless unknown, adds t-0 to its
	// transaction if added, and produces a transactional batch to t-0
	// with its epoch moved by dEpoch.
	produce := func(unknown, added bool, dEpoch int16) func(*testing.T, *scene) kmsg.Request {
		return func(t *testing.T, s *scene) kmsg.Request {
			pid, epoch := int64(5), int16(0)
			if !unknown {
				pid, epoch = initTxn(t, s, "tx")
			}
			if added {
				add := kmsg.NewPtrAddPartitionsToTxnRequest()
				add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx", pid, epoch
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic, rt.Partitions = "t", []int32{0}
				add.Topics = append(add.Topics, rt)
				if c := s.send(t, add, 3).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
					t.Fatalf("add partitions: %v", kerr.ErrorForCode(c))
				}
			}
			req := produceReq(s, -1, "t", 0, txnBatchAt(pid, epoch+dEpoch, "x"))
			req.TransactionID = kmsg.StringPtr("tx")
			return req
		}
	}
	refused := func(code int16) check[*kmsg.ProduceResponse] {
		return checks(wantProduced(code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0))
	}
	appended := checks(wantProduced(0, 0), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 1), wantInTxn(true))
	// byVersion picks the check of the row's produce version.
	byVersion := func(old, v11, tv2 check[*kmsg.ProduceResponse]) check[*kmsg.ProduceResponse] {
		return func(t *testing.T, s *scene, r *kmsg.ProduceResponse) {
			t.Helper()
			switch {
			case s.version >= 12:
				tv2(t, s, r)
			case s.version == 11:
				v11(t, s, r)
			default:
				old(t, s, r)
			}
		}
	}
	noVerify := sceneOpts{config: map[string]string{"transaction.state.log.num.partitions": "1", "transaction.partition.verification.enable": "false"}}
	all := []int16{3, 10, 11, 12, 13}
	runRows(t, tableOpts{}, []produceRow{
		{
			name: "a partition never added", versions: all, scene: txnScene, setup: ready,
			req: produce(false, false, 0),
			want: byVersion(checks(refused(kerr.InvalidTxnState.Code), wantInTxn(false)),
				checks(refused(kerr.TransactionAbortable.Code), wantInTxn(false)), appended),
		},
		{name: "a partition added", versions: all, scene: txnScene, setup: ready, req: produce(false, true, 0), want: appended},
		{
			// Kafka: the coordinator's INVALID_PRODUCER_ID_MAPPING for a
			// transactional id without InitProducerId.
			name: "an unknown transactional id", versions: all, scene: txnScene, setup: ready,
			req: produce(true, false, 0), want: refused(kerr.InvalidProducerIDMapping.Code),
		},
		{
			// PRODUCER_FENCED from the coordinator reaches the producer as
			// INVALID_PRODUCER_EPOCH.
			name: "an older producer epoch", versions: all, scene: txnScene, setup: ready,
			req: produce(false, true, -1), want: refused(kerr.InvalidProducerEpoch.Code),
		},
		{
			// Kafka 3.x without verification; a version 2 client's
			// partition is still added, or its markers would miss it.
			name: "verification disabled", versions: all, scene: noVerify, setup: ready,
			req:  produce(false, false, 0),
			want: byVersion(checks(wantProduced(0, 0), wantInTxn(false)), checks(wantProduced(0, 0), wantInTxn(false)), appended),
		},
	})
}

// wantInTxn checks whether t-0 is in "tx"'s ongoing transaction.
func wantInTxn(in bool) check[*kmsg.ProduceResponse] {
	return func(t *testing.T, s *scene, _ *kmsg.ProduceResponse) {
		t.Helper()
		d, err := s.env.Txn.Describe("tx")
		got := err == nil && len(d.Partitions) == 1 && d.Partitions[0] == txn.TopicPartition{Topic: "t", Partition: 0}
		if got != in {
			t.Errorf("transaction %+v (%v): t-0 in it %v, want %v", d, err, got, in)
		}
	}
}

// TestProduceVerificationRemote: the leader of t-0 (broker 1) asks the
// coordinator on broker 2 over AddPartitionsToTxn v5, the batched form,
// as Kafka's AddPartitionsToTxnManager does.
func TestProduceVerificationRemote(t *testing.T) {
	ready := func(t *testing.T, s *scene) {
		withAssignedTopic("t", map[int32][]int32{0: {1}}, nil)(t, s)
		withAssignedTopic(txn.TopicName, map[int32][]int32{0: {2}}, map[string]string{"cleanup.policy": "compact"})(t, s)
		for i := 0; !s.brokers[1].env.Txn.Loaded(0); i++ {
			if i == 1000 {
				t.Fatalf("%s-0 not loaded on broker 2 within 1000 rounds", txn.TopicName)
			}
			waitRound()
		}
		peers := &inProcessPeers{brokers: map[int32]*testBroker{1: s.brokers[0], 2: s.brokers[1]}}
		for _, b := range s.brokers {
			b.env.Peers = peers
		}
	}
	produce := func(t *testing.T, s *scene) kmsg.Request {
		resp := s.brokers[1].send(t, initTxnReq("tx")(t, s), 4).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("init producer id on broker 2: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		req := produceReq(s, -1, "t", 0, txnBatchAt(resp.ProducerID, resp.ProducerEpoch, "x"))
		req.TransactionID = kmsg.StringPtr("tx")
		return req
	}
	asked := func(t *testing.T, s *scene, _ *kmsg.ProduceResponse) {
		if s.env.Peers.(*inProcessPeers).sent.Load() == 0 {
			t.Error("broker 1 did not ask broker 2")
		}
	}
	inTxn := func(want bool) check[*kmsg.ProduceResponse] {
		return func(t *testing.T, s *scene, _ *kmsg.ProduceResponse) {
			d, err := s.brokers[1].env.Txn.Describe("tx")
			if got := err == nil && len(d.Partitions) == 1; got != want {
				t.Errorf("transaction %+v (%v): t-0 in it %v, want %v", d, err, got, want)
			}
		}
	}
	scene := sceneOpts{brokers: 2, config: map[string]string{"transaction.state.log.num.partitions": "1"}}
	runRows(t, tableOpts{}, []produceRow{
		{
			name: "verified by the coordinator on another broker", versions: []int16{3}, scene: scene, setup: ready, req: produce,
			want: checks(wantProduced(kerr.InvalidTxnState.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0), asked, inTxn(false)),
		},
		{
			name: "added by the coordinator on another broker", versions: []int16{13}, scene: scene, setup: ready, req: produce,
			want: checks(wantProduced(0, 0), asked, inTxn(true)),
		},
	})
}
