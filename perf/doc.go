// Package perf is Strata's load generator: the library behind
// `strata perf produce|consume`, modelled on Kafka's
// kafka-producer-perf-test and kafka-consumer-perf-test tools. It talks to
// any Kafka-compatible cluster through franz-go, so the same workload can be
// pointed at Strata, Apache Kafka or franz-go's kfake and the numbers
// compared (test/bench does exactly that).
//
// Produce writes fixed-size records (random bytes, no key, no compression,
// acks=all; with a codec, values that compress about 2:1) to one topic,
// creating the topic with kadm when it is missing, and measures each
// record's latency from the Produce call to its promise.
// Consume reads a topic from its log start without a consumer group and
// measures throughput. Every run is bounded: by a record count, by a
// duration, or by both (whichever comes first).
//
// Throughput is reported in MB/s where 1 MB = 2^20 bytes, as Kafka's tools
// do; bytes count record keys plus values, not protocol overhead.
//
// Concurrency: Produce starts one goroutine per producer client
// (ProduceOptions.Concurrency); they share an atomic record counter and the
// first error. Each client owns a latency Histogram guarded by its own mutex,
// because franz-go calls promises from its own goroutines; the histograms are
// merged once all clients have flushed. Consume polls from the calling
// goroutine only. Both functions return only after every goroutine they
// started has finished and every client is closed.
package perf
