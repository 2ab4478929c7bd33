package metadata

import "context"

// Reassignment is one requested partition reassignment: the replica set
// the partition must end with and the one it had before the first
// request (kept across re-submissions, so a cancel restores it).
type Reassignment struct {
	Topic     string
	Partition int32
	Target    []int32
	Original  []int32
	// Revision is the store revision of the request's last write; it
	// guards DeleteReassignment.
	Revision int64
}

// Reassignments keeps the pending reassignment requests: any broker
// records one (AlterPartitionReassignments), the controller drives the
// partition to its target and deletes it. They are not in the Cache.
type Reassignments interface {
	// PutReassignment records (or replaces) the request of one partition.
	PutReassignment(ctx context.Context, r Reassignment) error
	// Reassignments lists every pending request, in no particular order.
	Reassignments(ctx context.Context) ([]Reassignment, error)
	// DeleteReassignment removes a finished request unless it was
	// replaced since it was listed (its revision is no longer
	// r.Revision); either way it is not an error.
	DeleteReassignment(ctx context.Context, r Reassignment) error
}
