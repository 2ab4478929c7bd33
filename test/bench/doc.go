// Command bench (`make bench`, i.e. `go run ./test/bench`) runs one
// produce-then-consume workload with package perf against two systems side
// by side and prints a comparison table:
//
//   - strata: a single-node broker started in this process (broker.New,
//     embedded etcd, log dirs in a temporary directory, listener on a free
//     loopback port);
//   - kfake: franz-go's in-memory fake cluster, a yardstick that does no I/O.
//
// The workload is franz-go, 1 KiB records, no compression, acks=all,
// 4 partitions; by default 300,000 records (≈ 293 MB) per phase. Each round
// starts both systems fresh, in alternating order, and the table reports the
// median over rounds because the machine is noisy. With -cpuprofile the
// strata phases of the first round are CPU-profiled (client and broker
// share the process, so focus on broker packages when reading it).
//
// A second table prices the broker's check of compressed records: for
// each -codecs codec (lz4 and zstd by default) every round produces the
// same workload compressed, to a fresh strata broker checking the records
// inside compressed batches and to one that does not (the broker's path
// before it did; a bench-only switch in internal/benchhook, which this
// process shares with the broker), in alternating order, and reports
// validated/unchecked produce throughput against a 0.85x target. Values
// then compress about 2:1 each (see perf.ProduceOptions.Compression).
//
// A third table (-txn, on by default) runs transactions each round on a
// fresh strata and a fresh kfake: transactional produce (a commit every
// 10,000 records) against idempotent produce on strata (target 0.8x),
// the transactional topic read read_committed against read_uncommitted
// (0.9x), strata's transactional produce against kfake's (1.5x), and
// strata's EndTxn p50 and p99 on one broker (test/bench/cluster has them
// on three).
//
// A fourth table (-tls, on by default) prices security each round on a
// fresh strata broker with a PLAINTEXT, an SSL (a certificate made for
// the run with internal/testcerts) and a SASL_PLAINTEXT listener: the
// workload produced and consumed over SSL against over PLAINTEXT, to
// their own topics in alternating order (target 0.7x both ways), and
// the p50 and p99 of a fresh client's connection to its first Metadata
// response, plaintext against SCRAM-SHA-512 (ApiVersions, SaslHandshake
// and the two SaslAuthenticate round trips; the user is made with
// AlterUserScramCredentials). It runs an even number of rounds (half
// start with TLS), keeps its data in /dev/shm unless -dir is given (a
// disk's writeback would otherwise weigh more than TLS), reports each
// ratio as the median of the rounds' own ratios, and the process's CPU
// per MB of each phase beside the throughput. -systems "" skips the
// main table, to run this one (or the others) alone.
//
// The bench never asserts timings: it prints, and exits non-zero only when a
// run fails (an error, or fewer records acknowledged or read than asked).
//
// Concurrency: main runs everything sequentially; the only extra goroutine
// is the in-process broker's Run, stopped by cancelling its context and
// waited for before the next run starts.
package main
