package txn

import "errors"

// Errors of the transaction coordinator. Each stands for one Kafka error
// code; ErrorCode (codes.go) translates them at the protocol edge.
var (
	// ErrNotCoordinator: this broker does not lead the transactional id's
	// __transaction_state partition (NOT_COORDINATOR).
	ErrNotCoordinator = errors.New("txn: not the coordinator of this transactional id")
	// ErrLoadInProgress: the id's partition is still being loaded
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = errors.New("txn: coordinator is loading the transactional id's partition")
	// ErrCoordinatorNotAvailable: the coordinator is shutting down or a
	// write to __transaction_state failed (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = errors.New("txn: coordinator not available")
	// ErrInvalidRequest: an empty transactional id where one is required
	// (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("txn: invalid request")
	// ErrInvalidTxnTimeout: the requested transaction timeout is not
	// positive or exceeds transaction.max.timeout.ms
	// (INVALID_TRANSACTION_TIMEOUT).
	ErrInvalidTxnTimeout = errors.New("txn: invalid transaction timeout")
	// ErrProducerFenced: the request's producer epoch is not the current
	// one; a newer producer owns the transactional id (PRODUCER_FENCED).
	ErrProducerFenced = errors.New("txn: producer fenced by a newer epoch")
	// ErrInvalidProducerIDMapping: the request's producer id is not the
	// one the transactional id maps to, or the id is unknown
	// (INVALID_PRODUCER_ID_MAPPING).
	ErrInvalidProducerIDMapping = errors.New("txn: producer id does not match the transactional id")
	// ErrConcurrentTransactions: a state change of the transactional id
	// is in flight or its last transaction is still completing; retry
	// (CONCURRENT_TRANSACTIONS).
	ErrConcurrentTransactions = errors.New("txn: a transition of this transactional id is in progress")
	// ErrInvalidTxnState: the request is not valid in the transaction's
	// state, such as a commit of an aborting transaction
	// (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("txn: invalid transaction state for this request")
	// ErrTransactionAbortable: a partition the leader verifies is not in
	// the producer's ongoing transaction, which it must abort
	// (TRANSACTION_ABORTABLE; the leader answers older clients
	// INVALID_TXN_STATE, as Kafka does).
	ErrTransactionAbortable = errors.New("txn: partition not in the ongoing transaction")
	// ErrTransactionalIDNotFound: no such transactional id
	// (TRANSACTIONAL_ID_NOT_FOUND).
	ErrTransactionalIDNotFound = errors.New("txn: transactional id not found")
	// ErrIllegalTransition: a transition Kafka's state machine forbids,
	// or a completion that does not match the prepared transition: a bug,
	// never a client's fault (UNKNOWN_SERVER_ERROR, as Kafka's
	// IllegalStateException).
	ErrIllegalTransition = errors.New("txn: illegal transaction state transition")

	// ErrUnknownVersion: a __transaction_state record of a key or value
	// version this broker does not know; loading skips it, as Kafka does.
	ErrUnknownVersion = errors.New("txn: unknown __transaction_state record version")
)
