package txn

import "github.com/twmb/franz-go/pkg/kmsg"

// State is a transaction's state, with Kafka's ids (the TransactionStatus
// byte of __transaction_state values) and names (DescribeTransactions,
// ListTransactions): kmsg's TransactionState.
type State = kmsg.TransactionState

// Kafka's transaction states.
const (
	// Empty: no transaction open; InitProducerId leaves an id here.
	Empty = kmsg.TransactionStateEmpty
	// Ongoing: partitions (or a group's offsets) were added.
	Ongoing = kmsg.TransactionStateOngoing
	// PrepareCommit: EndTxn(commit) is logged; markers are being written.
	PrepareCommit = kmsg.TransactionStatePrepareCommit
	// PrepareAbort: an abort is logged; markers are being written.
	PrepareAbort = kmsg.TransactionStatePrepareAbort
	// CompleteCommit: every commit marker is written.
	CompleteCommit = kmsg.TransactionStateCompleteCommit
	// CompleteAbort: every abort marker is written.
	CompleteAbort = kmsg.TransactionStateCompleteAbort
	// Dead: the transactional id expired and is being removed (never
	// logged; its record is a tombstone).
	Dead = kmsg.TransactionStateDead
	// PrepareEpochFence: an InitProducerId (or the timeout sweep) is
	// bumping the epoch of an ongoing transaction to fence its producer;
	// only ever pending, it turns into PrepareAbort.
	PrepareEpochFence = kmsg.TransactionStatePrepareEpochFence
)

// validPrevious is Kafka's table of the states each state may be entered
// from. PrepareAbort may follow Empty, CompleteCommit and CompleteAbort
// for transaction version 2 clients, which end a transaction when unsure
// of the coordinator's state (completeTo checks the version).
var validPrevious = map[State][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// AllStates lists the states in id order.
var AllStates = []State{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence}

// ValidTransition reports whether Kafka's state machine allows from → to.
func ValidTransition(from, to State) bool {
	for _, s := range validPrevious[to] {
		if s == from {
			return true
		}
	}
	return false
}

// expirationAllowed reports whether a transactional id in state s may
// expire after transactional.id.expiration.ms without updates: only when
// no transaction is open.
func expirationAllowed(s State) bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// validState reports whether s is one of Kafka's state ids.
func validState(s State) bool { return s >= Empty && s <= PrepareEpochFence }
