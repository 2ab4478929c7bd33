package group

import "errors"

// Errors of the group coordinator. Each stands for one Kafka error code;
// broker/handler translates them (see its groups.go).
var (
	// ErrNotCoordinator: this broker does not lead the group's
	// __consumer_offsets partition (NOT_COORDINATOR).
	ErrNotCoordinator = errors.New("group: not the coordinator of this group")
	// ErrLoadInProgress: the group's partition is still being loaded
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = errors.New("group: coordinator is loading the group's partition")
	// ErrCoordinatorNotAvailable: the coordinator is shutting down, the
	// group is being removed, or a write to __consumer_offsets failed
	// (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = errors.New("group: coordinator not available")
	// ErrInvalidGroupID: an empty group id where one is required (INVALID_GROUP_ID).
	ErrInvalidGroupID = errors.New("group: invalid group id")
	// ErrUnknownMemberID: the member id is not in the group (UNKNOWN_MEMBER_ID).
	ErrUnknownMemberID = errors.New("group: unknown member id")
	// ErrMemberIDRequired: a JoinGroup v4+ without a member id; the response
	// carries the id to rejoin with (MEMBER_ID_REQUIRED).
	ErrMemberIDRequired = errors.New("group: member id required")
	// ErrIllegalGeneration: the request's generation is not the group's
	// (ILLEGAL_GENERATION).
	ErrIllegalGeneration = errors.New("group: illegal generation")
	// ErrRebalanceInProgress: the group is rebalancing; rejoin
	// (REBALANCE_IN_PROGRESS).
	ErrRebalanceInProgress = errors.New("group: rebalance in progress")
	// ErrFencedInstanceID: another member id now owns this static
	// group.instance.id (FENCED_INSTANCE_ID).
	ErrFencedInstanceID = errors.New("group: instance id fenced by a newer member")
	// ErrInconsistentProtocol: the member's protocol type or protocols do
	// not match the group's (INCONSISTENT_GROUP_PROTOCOL).
	ErrInconsistentProtocol = errors.New("group: inconsistent group protocol")
	// ErrInvalidSessionTimeout: the session timeout is outside
	// group.min/max.session.timeout.ms (INVALID_SESSION_TIMEOUT).
	ErrInvalidSessionTimeout = errors.New("group: session timeout out of range")
	// ErrGroupMaxSize: the group has group.max.size members
	// (GROUP_MAX_SIZE_REACHED).
	ErrGroupMaxSize = errors.New("group: group max size reached")
	// ErrGroupNotFound: no such group (GROUP_ID_NOT_FOUND).
	ErrGroupNotFound = errors.New("group: group not found")
	// ErrNonEmptyGroup: the group still has members (NON_EMPTY_GROUP).
	ErrNonEmptyGroup = errors.New("group: group is not empty")
	// ErrSubscribedToTopic: an active consumer group still consumes the
	// topic whose offsets were to be deleted (GROUP_SUBSCRIBED_TO_TOPIC).
	ErrSubscribedToTopic = errors.New("group: group is subscribed to the topic")
	// ErrMetadataTooLarge: a commit's metadata string is longer than
	// offset.metadata.max.bytes (OFFSET_METADATA_TOO_LARGE).
	ErrMetadataTooLarge = errors.New("group: offset metadata too large")

	// KIP-848 consumer groups.

	// ErrInvalidRequest: a ConsumerGroupHeartbeat misses or misuses a field;
	// the wrapped message says which (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("group: invalid request")
	// ErrUnsupportedAssignor: an unknown server-side assignor
	// (UNSUPPORTED_ASSIGNOR).
	ErrUnsupportedAssignor = errors.New("group: unsupported server-side assignor")
	// ErrUnreleasedInstanceID: a static member joins while its instance id
	// is still held by an active member (UNRELEASED_INSTANCE_ID).
	ErrUnreleasedInstanceID = errors.New("group: instance id not released")
	// ErrFencedMemberEpoch: the member's epoch is not one the coordinator
	// accepts; it must rejoin with epoch 0 (FENCED_MEMBER_EPOCH).
	ErrFencedMemberEpoch = errors.New("group: fenced member epoch")
	// ErrStaleMemberEpoch: an offset commit or fetch with an old member
	// epoch (STALE_MEMBER_EPOCH).
	ErrStaleMemberEpoch = errors.New("group: stale member epoch")
	// ErrUnsupportedVersion: a member of a KIP-848 group committed with an
	// OffsetCommit older than v9 (UNSUPPORTED_VERSION).
	ErrUnsupportedVersion = errors.New("group: request version too old for a consumer-protocol member")
)
