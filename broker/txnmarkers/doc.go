// Package txnmarkers writes the markers that end transactions: it is the
// transaction coordinator's txn.MarkerWriter, modelled on Kafka's
// TransactionMarkerChannelManager. For each transaction it groups the
// partitions still waiting for their marker by their current leader (from
// the metadata cache), sends each leader a WriteTxnMarkers (through
// Config.Peers, or Config.Local when the leader is this broker), and
// retries the partitions that answered a retriable error, or whose leader
// could not be reached, after a backoff, until every partition has its
// marker; it then calls the coordinator's done. A partition whose topic
// or partition no longer exists needs no marker, as in Kafka. The work is
// dropped without calling done when the coordinator epoch is stale
// (Config.Current, or a leader answers TRANSACTION_COORDINATOR_FENCED) or
// the producer was fenced (INVALID_PRODUCER_EPOCH): the coordinator that
// owns the transaction now writes its markers again after loading.
//
// Concurrency: one goroutine per transaction being written (started by
// WriteMarkers, which never blocks), sending to its leaders in parallel,
// one goroutine per leader per attempt; the goroutines share nothing but
// the Config. Close cancels them and waits for them.
package txnmarkers
