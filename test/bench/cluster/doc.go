// Command cluster is Strata's replication benchmark (`make bench`, issue 4
// item 8): three broker processes on loopback against one etcd, measuring
// RF=3 acks=all against RF=1 produce throughput, the produce p99 latency
// at a fixed rate (10 MB/s by default), and the failover time (leader
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
// cache full and recycled (on a 24 GiB VM); how the ratio moves between
// the two is in the notes. A run may then write 120 GB: runs that
// could fill the disk are refused.
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
// What bounds the ratio on the 2-core development VM: every process shares
// the two cores, so RF=3 against RF=1 is their CPU per MB against each
// other, and the VM taxes exactly what replication adds. Measured there
// (perf bench, dd, tier/segment's drop-behind): a syscall costs 1.2 µs and
// a pipe round trip between two threads 25 µs (several times bare metal);
// a write that grows the page cache costs 1.8-2.0 ms of CPU per MB, one
// into pages just dropped behind 0.3, one over cached pages 0.09.
// An RF=3 run makes 78 syscalls and 41 context switches per MB produced
// against RF=1's 21 and 16. perf's top costs are the kernel's copies, its
// paravirtual interrupt enabling (pvm_irq_enable, 13-20% of all CPU), the
// CRC-32C of producers and of Kafka's validation (7%) and the Go runtime
// (14%, sysmon waking to retake Ps from syscalls 4% of it); Strata's own
// code, by self time, 2%.
//
// Concurrency: main owns every child process and runs the phases one after
// another; perf.Produce runs its own producer goroutines.
package main
