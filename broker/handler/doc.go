// Package handler answers Kafka requests: one file per API key (named like
// franz-go's kfake: 00_produce.go, 01_fetch.go, …), each opening with the
// versions it serves and its behaviour, and one registration table
// (table.go) from which ApiVersions is derived, so an API is registered in
// exactly one place.
//
// Kafka error codes appear only here (errors.go maps package sentinels to
// kerr codes). A handler returns Kafka errors inside its response; a Go
// error from a handler means the request could not be answered at all and
// the connection is closed.
//
// Handlers read the broker's configuration through Env.Cfg, a
// config.Live that follows the dynamic broker configs (brokerconfigs.go);
// a handler loads it once per request.
//
// Handlers see the metadata store only through Env.Store (Store: the
// few roles they write) and Env.Cache (reads), so they run the same on
// metadata/etcdstore in a broker and on metadata/memstore in in-process
// tests. No handler writes partition state: ElectLeaders runs on the
// controller (Env.Elector) and other brokers forward it there (Env.Peers).
//
// Transactions (KIP-890): ApiVersions finalizes transaction.version 2, so
// clients end transactions with EndTxn v5 (every end bumps the epoch) and
// leave adding partitions to the brokers: a partition leader asks the
// transaction coordinator (txn_verify.go, in-process or over the batched
// AddPartitionsToTxn v5 through Env.Peers) before it appends a
// transactional batch: adds the partition for produce v12+ and
// TxnOffsetCommit v5+, verifies it for older ones when
// transaction.partition.verification.enable is set. The append happens
// under the partition's VerificationGuard, so no hanging transaction can
// form.
//
// Concurrency: handlers are plain functions over a shared *Env. The
// connection loop runs most handlers on its own goroutine, in request order;
// handlers marked Async in the table (Fetch, which may long-poll) run on a
// goroutine of their own, while their response still goes out in request
// order. Handlers marked ReleasesFrame keep nothing that points into the
// request's frame once they return, so the connection reads its next
// request into the same buffer. Produce's call to the transaction
// coordinator (at most once per partition and transaction) runs on the
// connection's goroutine before the handler returns, bounded by
// txnVerifyTimeout, as the records it appends still point into the frame.
// Everything in Env is safe for concurrent use.
package handler
