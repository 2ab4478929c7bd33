// Command tier (`make bench`, i.e. `go run ./test/bench/tier`) benchmarks
// tiered storage (package tier/remote) against a real MinIO (test/minio;
// `make deps` installs the binary) and one Strata broker started in this
// process with the s3 backend and the default
// remote.log.manager.task.interval.ms (30 s). It creates a tiered topic
// (4 partitions, segment.bytes 8 MiB, local.retention.bytes 8 MiB by
// default), and:
//
//  1. produces -factor (20) × local.retention.bytes per partition at
//     -rate MB/s (640 MiB at 32 MB/s by default; the disk bound is to hold
//     while 10× is produced, and 20× makes each timed cold read last about
//     a second, so that a fresh broker's first fetch (the metadata, the
//     offset index and the first chunk) weighs little in it) while two
//     samplers run:
//     one lists the partition directories every 20 ms (a segment is sealed
//     when a newer base appears; the sum of the .log files is the local
//     disk use), the other reads each partition's manifest.json from
//     MinIO every 50 ms (a segment's copy is finished when its base offset
//     appears). It prints the copy lag (sealed → in the manifest) median,
//     p99 and max over the segments (target p99 < 5 s), and the peak
//     local .log bytes against the bound local.retention.bytes + one
//     segment (the active one) + one in-flight copy per partition;
//  2. waits until every sealed segment is copied, takes as the cold set
//     the copies that end below each partition's local log start (their
//     data is only in MinIO), reads them once untimed to warm MinIO, and
//     in each of -rounds (3) rounds, in alternating order, (a) restarts
//     the broker (a fresh chunk cache) and consumes the cold range from
//     offset 0 with a franz-go consumer, (b) reads the same .log objects
//     (listed with minio-go) with sequential minio-go GETs, and (c) as a
//     reference for what the Kafka
//     read path costs by itself, consumes a second, untiered topic holding
//     as many records on local disk. A fourth read, on a fresh broker
//     too, fetches the cold range with raw Fetch requests into one reused
//     buffer, records not decoded, as the raw GET reads into one. It
//     prints the MB/s of each (bytes of the .log files over wall time) per
//     round, their medians and the ratios cold/raw (target ≥ 0.8), raw
//     Fetch/raw, cold/hot and hot/raw, the first two also as the median
//     of each round's own ratio (robust to load drifting between rounds); the CPU per MB of the raw GET, the
//     raw Fetch and the hot and cold consumes (MinIO's part apart); and
//     the ceiling a cold kgo consume has on these cores: the cores over the
//     hot consume's CPU per MB plus MinIO's for the raw GET.
//
// The bench never asserts timings: it prints "meets"/"below" next to each
// target and exits non-zero only when something fails. With -cpuprofile
// the first cold raw fetch, with -kgo-cpuprofile the first cold kgo
// consume, is CPU-profiled (broker and client share the process; look at
// the tier/remote and broker packages).
//
// Concurrency: main runs the phases in sequence. During the produce phase
// two sampler goroutines run, each owning its own state until main stops
// them and reads it; the in-process broker's Run goroutine is stopped by
// cancelling its context and waited for.
package main
