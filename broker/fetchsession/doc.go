// Package fetchsession holds incremental fetch sessions (KIP-227), both
// ends of them.
//
// Cache is the broker's side, as Kafka's FetchSessionCache and
// FetchManager: a full fetch may open a session that remembers its
// partitions and what was last answered for each, so that later
// (incremental) fetches name only the partitions whose fetch changed and
// get back only the partitions whose answer changed. Sessions are limited
// to max.incremental.fetch.session.cache.slots, split evenly over Shards
// shards that new sessions take in turn; a full shard evicts, within
// itself, a session idle longer than EvictAfter, else the least valuable
// one (a consumer's before a follower's, then the fewest partitions) when
// the new session is worth more and that one is older than EvictAfter
// (tryEvict).
//
// Client is the fetcher's side, as Kafka's FetchSessionHandler: it turns
// each full list of partitions to fetch into a full or incremental
// request and follows the session's id and epoch through the answers.
//
// Concurrency: each shard has one mutex that guards its sessions and their
// partitions; every Cache and Context method holds it for its whole run
// and neither blocks nor calls out meanwhile (a shard holds a few hundred
// sessions at most, so its scans are short), but for a partition's
// Handle, an atomic pointer read and written without it. A Context is
// used by the one fetch that made it. A Client is not safe for concurrent
// use: one fetch loop owns it.
package fetchsession
