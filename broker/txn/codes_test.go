package txn

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrorCode(t *testing.T) {
	want := []struct {
		err  error
		code *kerr.Error
	}{
		{ErrNotCoordinator, kerr.NotCoordinator},
		{ErrLoadInProgress, kerr.CoordinatorLoadInProgress},
		{ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
		{ErrInvalidRequest, kerr.InvalidRequest},
		{ErrInvalidTxnTimeout, kerr.InvalidTransactionTimeout},
		{ErrProducerFenced, kerr.ProducerFenced},
		{ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
		{ErrConcurrentTransactions, kerr.ConcurrentTransactions},
		{ErrInvalidTxnState, kerr.InvalidTxnState},
		{ErrTransactionAbortable, kerr.TransactionAbortable},
		{ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},
		{ErrIllegalTransition, kerr.UnknownServerError},
		{ErrUnknownVersion, kerr.UnknownServerError},
	}
	if len(want) != len(errorCodes) {
		t.Fatalf("errorCodes has %d rows, the test %d: keep them in step", len(errorCodes), len(want))
	}
	for _, w := range want {
		if got := ErrorCode(w.err); got != w.code.Code {
			t.Errorf("ErrorCode(%v) = %d, want %s", w.err, got, w.code.Message)
		}
		if got := ErrorCode(fmt.Errorf("context: %w", w.err)); got != w.code.Code {
			t.Errorf("ErrorCode(wrapped %v) = %d, want %s", w.err, got, w.code.Message)
		}
	}
	if ErrorCode(nil) != 0 {
		t.Error("ErrorCode(nil) is not 0")
	}
	if ErrorCode(errors.New("other")) != kerr.UnknownServerError.Code {
		t.Error("an unknown error is not UNKNOWN_SERVER_ERROR")
	}
}
