// Package compaction will keep logs within their policies: retention
// (cleanup.policy=delete: drop whole segments past retention.ms or
// retention.bytes) and cleaning (cleanup.policy=compact: keep the latest
// record per key). It sits between the broker, which schedules it, and the
// tier logs it rewrites. Nothing lives here yet; see the retention and
// compaction issue.
package compaction
