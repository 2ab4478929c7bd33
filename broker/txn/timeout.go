package txn

import (
	"fmt"
	"time"
)

// ValidateTimeout checks a requested transaction timeout against
// transaction.max.timeout.ms: it must be positive and at most max
// (ErrInvalidTxnTimeout).
func ValidateTimeout(timeoutMs int32, max time.Duration) error {
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > max {
		return fmt.Errorf("%w: %d ms, the maximum is %d ms", ErrInvalidTxnTimeout, timeoutMs, max.Milliseconds())
	}
	return nil
}

// TimedOut reports whether the abort sweep must abort m's transaction: it
// is Ongoing with no change in flight and started more than its timeout
// before now.
func (m *Metadata) TimedOut(now time.Time) bool {
	return m.State == Ongoing && !m.hasPending && m.StartMs+int64(m.TimeoutMs) < now.UnixMilli()
}

// Expired reports whether m's transactional id may be removed: no
// transaction is open, no change is in flight, and it was last updated
// at least expiration (transactional.id.expiration.ms) before now.
func (m *Metadata) Expired(now time.Time, expiration time.Duration) bool {
	return expirationAllowed(m.State) && !m.hasPending && m.LastUpdateMs <= now.UnixMilli()-expiration.Milliseconds()
}
