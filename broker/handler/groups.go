package handler

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-broker/strata/broker/group"
)

// groupErrorCode translates the group coordinator's errors into Kafka
// error codes (the group-API counterpart of errorCode in errors.go).
func groupErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, m := range groupErrors {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return errorCode(err)
}

var groupErrors = []struct {
	err  error
	code int16
}{
	{group.ErrNotCoordinator, kerr.NotCoordinator.Code},
	{group.ErrLoadInProgress, kerr.CoordinatorLoadInProgress.Code},
	{group.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable.Code},
	{group.ErrInvalidGroupID, kerr.InvalidGroupID.Code},
	{group.ErrUnknownMemberID, kerr.UnknownMemberID.Code},
	{group.ErrMemberIDRequired, kerr.MemberIDRequired.Code},
	{group.ErrIllegalGeneration, kerr.IllegalGeneration.Code},
	{group.ErrRebalanceInProgress, kerr.RebalanceInProgress.Code},
	{group.ErrFencedInstanceID, kerr.FencedInstanceID.Code},
	{group.ErrInconsistentProtocol, kerr.InconsistentGroupProtocol.Code},
	{group.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout.Code},
	{group.ErrGroupMaxSize, kerr.GroupMaxSizeReached.Code},
	{group.ErrGroupNotFound, kerr.GroupIDNotFound.Code},
	{group.ErrNonEmptyGroup, kerr.NonEmptyGroup.Code},
	{group.ErrSubscribedToTopic, kerr.GroupSubscribedToTopic.Code},
	{group.ErrMetadataTooLarge, kerr.OffsetMetadataTooLarge.Code},
	{group.ErrInvalidRequest, kerr.InvalidRequest.Code},
	{group.ErrUnsupportedAssignor, kerr.UnsupportedAssignor.Code},
	{group.ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID.Code},
	{group.ErrFencedMemberEpoch, kerr.FencedMemberEpoch.Code},
	{group.ErrStaleMemberEpoch, kerr.StaleMemberEpoch.Code},
	{group.ErrUnsupportedVersion, kerr.UnsupportedVersion.Code},
}

// millis converts a protocol millisecond count.
func millis[T int32 | int64](ms T) time.Duration { return time.Duration(ms) * time.Millisecond }

// partitionExists reports whether the metadata knows topic/partition, as
// Kafka checks offset commits and deletions before the coordinator sees
// them.
func (e *Env) partitionExists(topic string, partition int32) bool {
	t, ok := e.Cache.Topic(topic)
	if !ok {
		return false
	}
	_, ok = t.Partitions[partition]
	return ok
}
