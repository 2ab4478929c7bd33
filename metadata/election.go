package metadata

import (
	"context"
	"time"
)

// NoController is ControllerInfo.ID while no controller is elected.
const NoController int32 = -1

// ControllerInfo is the elected controller as the store records it.
type ControllerInfo struct {
	ID    int32 // broker id of the controller; NoController if none
	Epoch int32 // controller epoch of its term (0 when none)
}

// ControllerElection elects the cluster's one controller: the store's
// analogue of ZooKeeper's /controller and /controller_epoch.
type ControllerElection interface {
	// Campaign waits until broker id is elected, then claims the role: in
	// one step it bumps the controller epoch and records {id, epoch} as
	// the controller. The candidacy lives in a session the store keeps
	// alive; ttl (rounded up to whole seconds) is how long a candidate
	// whose process died keeps it. Candidates are elected in the order
	// they campaigned. ctx bounds only the wait: cancelling it withdraws
	// the candidacy. Fails with ctx's error, ErrSessionLost or ErrClosed.
	Campaign(ctx context.Context, id int32, ttl time.Duration) (Term, error)
	ControllerWatcher
}

// ControllerWatcher follows the controller record, for every broker's
// Metadata and DescribeCluster answers.
type ControllerWatcher interface {
	// WatchController delivers the controller record: the current value
	// at once, then every change, until ctx ends or the store closes
	// (then the channel is closed). ID is NoController while none is
	// elected. Only the newest value waits in the channel; a slow reader
	// skips intermediate ones.
	WatchController(ctx context.Context) <-chan ControllerInfo
}

// Term is one won election: the controller's right to write, which ends
// when its session ends (lease expired, store unreachable or closed),
// when its campaign key vanishes, or at Close. Its CompareAndSetPartition
// is fenced: once the term is over no write of it can succeed, so a
// deposed controller changes nothing. Safe for concurrent use.
type Term interface {
	// CompareAndSetPartition is Partitions.CompareAndSetPartition that
	// succeeds only while the term lasts; otherwise it fails with
	// ErrFenced (and the term ends, if it had not noticed yet).
	Partitions
	// Epoch is the controller epoch this term claimed.
	Epoch() int32
	// Revision is the store revision of the claim: a controller waits for
	// its Cache to reach it before deciding anything.
	Revision() int64
	// Done is closed when the term is over.
	Done() <-chan struct{}
	// Err is nil while the term lasts; afterwards why it ended, wrapping
	// ErrSessionLost, ErrFenced, or ErrClosed (Close was called).
	Err() error
	// Close ends the term and withdraws the candidacy, so the next
	// candidate is elected at once. Idempotent.
	Close() error
}
