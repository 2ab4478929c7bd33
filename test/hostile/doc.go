// Package hostile runs the strata binary as a real process and attacks it
// with hostile input: random bytes and lying frame lengths, frames that
// announce 100 MB and send 10 bytes, half-sent and trickled frames,
// thousands of idle connections, requests pipelined and never read,
// too many connections from one address, batches with bad CRCs, v0/v1
// message sets, compression bombs and batches that lie about their
// record count, invalid and internal topic names, impossible
// CreateTopics, an accept storm under a low open-file limit, and kill -9
// loops with torn and corrupted log tails.
//
// Each case ends with the same check: the broker process is alive, a
// fresh franz-go client produces and reads back one record within
// livenessBound, and every record of a canary topic, produced with
// acks=all before the first case, is still there. A memory case also
// reads the broker's VmRSS before and after and fails when it grew by
// more than rssGrowthBound.
//
// One broker process serves the cases that need no configuration of their
// own (TestHostileInputs, one table); the accept storm runs its broker
// under prlimit and the kill -9 loop kills and restarts its broker, so
// each has a process of its own. STRATA_HOSTILE_LONG=1 (set by `make
// chaos`) runs the longer variants: more kill -9 rounds, more
// connections.
//
// Every wait is on a condition (a connection seen closed in
// /proc/net/tcp, a log line, an acknowledgement) bounded by a deadline;
// nothing sleeps for a fixed time, and every loop is bounded. Only
// loopback addresses are used. The tests of a package run one after
// another, each with its own broker process.
package hostile
