// Package e2e holds end-to-end tests of Strata with real Kafka clients over
// TCP: franz-go (kgo, kadm and raw kmsg requests), sarama, kcat
// (librdkafka) and kafka-python. Brokers come from test/harness, mostly
// in-process; the crash test runs the real binary and kills it with SIGKILL.
//
// Every test starts its own broker, so tests are independent and run
// sequentially (the machine has two cores and the suite must stay well
// under three minutes with -race). Waits are bounded by contexts; the only
// deliberate delay is in the long-poll test, which must let a fetch park
// before producing.
package e2e
