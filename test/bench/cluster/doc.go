// Command cluster is Strata's replication benchmark (`make bench`): three
// broker processes on loopback against one etcd, measuring
// RF=3 acks=all against RF=1 produce throughput, the produce p99 latency
// at a fixed rate (10 MB/s by default), the EndTxn (commit) p50 and p99
// of a transactional producer at that rate, and the failover time (leader
// kill -9 to the first successful acks=all produce on the new leader,
// median of several) for each broker.session.timeout.ms given.
//
//	go run ./test/bench/cluster [-duration 5s] [-warmup 0] [-sessions 3000,9000] [-trials 3] [-rate 10] [-warm 8] [-set key=value ...]
//
// -set passes broker settings to the throughput cluster, e.g.
// -set log.page.cache.window.bytes=67108864 to compare drop-behind.
//
// -warmup produces to each throughput run's topic, unmeasured, before the
// run (the raw peer likewise). The default 5 s runs fit in the page cache:
// an RF=1 run's bytes are deleted with its topic before any reach the
// disk, while RF=3 followers write theirs back as they go. -warmup 75s
// measures the steady state of a long-running broker instead, its page
// cache full and recycled (on a 24 GiB VM). A run may then write 120 GB:
// runs that could fill the disk are refused.
//
// First it writes and deletes -warm GiB (warm.go): on a VM the first touch
// of a page-cache page costs several times a reuse, which would tax
// whichever run first grows the page cache. The fixed-rate run comes
// first, on a quiet cluster. The throughput runs
// go RF=1, RF=3, RF=3, RF=1 (each on its own topic, deleted after it) with
// the same client settings, so that drift during the bench weighs on both
// alike; each run also reports the CPU the brokers and the clients spent
// per MB produced, which is what bounds the ratio when the cores are busy.
//
// Then the raw replication peer (raw.go, -raw=false skips it) moves the
// same kind of bytes the same way, RF=1, RF=3, RF=3, RF=1, with nothing
// but TCP, a CRC check, pwrite and sendfile (followers dropping their
// pages behind, as Strata's do by default): about the floor of any
// Kafka-style broker's CPU per MB on this machine.
//
// What bounds the ratio on a small VM: every process shares the cores, so
// RF=3 against RF=1 is their CPU per MB against each other, and a VM taxes
// exactly what replication adds: syscalls, context switches and page-cache
// growth, all dearer than on bare metal, and RF=3 makes several times as
// many of each per MB produced. doc/perf.md has the figures measured on
// the 2-core development VM and how to measure them.
//
// Concurrency: main owns every child process and runs the phases one after
// another; perf.Produce runs its own producer goroutines.
package main
