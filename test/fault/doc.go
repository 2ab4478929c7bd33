// Package fault holds Strata's robustness tests: a three-broker cluster of
// real broker processes on a three-member etcd, idempotent acks=all
// producers writing a bounded stream of unique records, and a nemesis that
// kill -9s partition leaders, SIGSTOPs a broker past its lease, cuts a
// broker off the network through the TCP proxies it is reached by (both
// must register again by themselves, without a restart), restarts an
// etcd member, takes etcd's quorum away (two of three members paused or
// killed) while records are produced, after which every broker must serve
// again without a restart, and cuts a partition leader off etcd alone
// while clients still reach it (the deposed leader must acknowledge
// nothing once the controller moved its leaderships). A checker then proves that every
// acknowledged record is readable exactly once, in order per producer and
// partition, with no offset gaps below the high watermark, and that all
// replicas are byte-identical after healing.
//
// TestNemesisTxn runs a transactional producer on the same cluster,
// committing and aborting transactions while the nemesis kill -9s the
// transaction coordinator's broker and a partition leader as commits
// begin; a read_committed consumer must then read every committed
// transaction's records exactly once and none of an aborted one (a
// transaction whose commit failed: all or none). TestNemesisTxnChain runs
// the test/txnchain pipeline of GroupTransactSessions (two stages, two
// members each) on the cluster while the nemesis kill -9s, as a stage's
// member begins to commit, its transaction coordinator, its group
// coordinator and a leader of its output topic; every input record must
// come out exactly once with read_committed.
//
// etcd_test.go runs one broker process through outages of its etcd:
// paused past the broker's lease, killed and restarted, and not yet
// running when the broker starts (it waits, answering nothing, and exits
// non-zero past initial.broker.registration.timeout.ms). TestMinInsyncReplicas freezes a follower
// of an RF=3 topic with min.insync.replicas=3 and checks the produce
// answers below the minimum: NOT_ENOUGH_REPLICAS_AFTER_APPEND for a batch
// appended before the ISR shrank, NOT_ENOUGH_REPLICAS (nothing appended)
// after.
//
// Size and seed come from the environment: STRATA_FAULT_RECORDS (records
// in the stream, default 20000), STRATA_FAULT_ROUNDS (nemesis rounds of
// eight faults each, two for TestNemesisTxn, three for
// TestNemesisTxnChain; default 1), STRATA_FAULT_GROUP_PROTOCOLS (the group
// protocols TestNemesisTxnChain runs with, of eager, cooperative and
// kip848, comma-separated; default cooperative),
// STRATA_FAULT_ETCD_OUTAGE (seconds each etcd outage lasts, default twice
// the brokers' lease TTL) and
// STRATA_FAULT_SEED (the nemesis RNG seed, printed in the output; default
// derived from the clock). `make chaos` runs a longer schedule, with
// 30-second etcd outages and the chain under all three group protocols.
//
// Concurrency: the test goroutine owns the cluster and runs the nemesis
// (the harness may only fail the test from it); producer goroutines only
// produce and record acknowledgements under the stream's mutex; the
// transactional workload's goroutine likewise runs transactions and
// records their outcomes under its own mutex; the chain's members and
// input feeder run on goroutines of their own and report to the test
// goroutine through channels and a context's cancellation cause.
package fault
