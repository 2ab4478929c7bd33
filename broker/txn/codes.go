package txn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrorCode translates the coordinator's errors into Kafka error codes,
// for the request handlers: nil is 0, an error outside the table
// UNKNOWN_SERVER_ERROR.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, m := range errorCodes {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return kerr.UnknownServerError.Code
}

// errorCodes is the one table from the package's errors to Kafka's codes.
var errorCodes = []struct {
	err  error
	code int16
}{
	{ErrNotCoordinator, kerr.NotCoordinator.Code},
	{ErrLoadInProgress, kerr.CoordinatorLoadInProgress.Code},
	{ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable.Code},
	{ErrInvalidRequest, kerr.InvalidRequest.Code},
	{ErrInvalidTxnTimeout, kerr.InvalidTransactionTimeout.Code},
	{ErrProducerFenced, kerr.ProducerFenced.Code},
	{ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping.Code},
	{ErrConcurrentTransactions, kerr.ConcurrentTransactions.Code},
	{ErrInvalidTxnState, kerr.InvalidTxnState.Code},
	{ErrTransactionAbortable, kerr.TransactionAbortable.Code},
	{ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound.Code},
	{ErrIllegalTransition, kerr.UnknownServerError.Code},
	{ErrUnknownVersion, kerr.UnknownServerError.Code},
}
