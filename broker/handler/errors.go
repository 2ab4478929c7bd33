package handler

import (
	"errors"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/remote"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errorCode translates an error from the layers below into a Kafka error
// code. This is the one place where package sentinels meet kerr.
func errorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, record.ErrTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, record.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, record.ErrUnsupportedMagic):
		return kerr.InvalidRecord.Code // Kafka: magic < 2 in produce v3+
	case errors.Is(err, record.ErrTruncated):
		return kerr.InvalidRecord.Code // Kafka: no whole batch in produce v3+
	case errors.Is(err, record.ErrCorrupt):
		return kerr.CorruptMessage.Code
	case errors.Is(err, producer.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, producer.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, producer.ErrTransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, partition.ErrOffsetOutOfRange), errors.Is(err, local.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, partition.ErrTxnNotVerified):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, partition.ErrNotLeaderOrFollower):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, local.ErrStorage):
		// Retriable, as Kafka answers for a log it cannot write; a full
		// disk takes appends again once space is freed.
		return kerr.KafkaStorageError.Code
	case errors.Is(err, remote.ErrMetadataUnavailable):
		// Kafka's answer while a partition's remote metadata is not ready
		// (RemotePartitionMetadataStore): retriable.
		return kerr.ReplicaNotAvailable.Code
	case errors.Is(err, metadata.ErrUnavailable):
		// etcd out of reach: Kafka's answer when the controller could not
		// act within the request's time (retriable).
		return kerr.RequestTimedOut.Code
	case errors.Is(err, metadata.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, metadata.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, metadata.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, metadata.ErrInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, metadata.ErrTooLarge):
		// Kafka's controller: "Unable to perform excessively large batch
		// operation".
		return kerr.PolicyViolation.Code
	case errors.Is(err, metadata.ErrNoSpace):
		// Retriable: the store takes writes again once space is freed.
		return kerr.KafkaStorageError.Code
	case errors.Is(err, errInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, errInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, errInvalidRequest), errors.Is(err, config.ErrNotDynamic), errors.Is(err, metadata.ErrInvalidBrokerID):
		return kerr.InvalidRequest.Code
	case errors.Is(err, errPartitionLimit):
		return kerr.PolicyViolation.Code
	case errors.Is(err, config.ErrUnknownKey), errors.Is(err, config.ErrInvalidValue):
		return kerr.InvalidConfig.Code
	default:
		return kerr.UnknownServerError.Code
	}
}

// storageErrorCode is errorCode for the errors of reading or trimming a
// log: those of no known kind are KAFKA_STORAGE_ERROR (retriable), as
// Kafka answers a failed log directory, rather than UNKNOWN_SERVER_ERROR.
func storageErrorCode(err error) int16 {
	if c := errorCode(err); c != kerr.UnknownServerError.Code {
		return c
	}
	return kerr.KafkaStorageError.Code
}

// errorMessage is the text sent with an error code, where the API has room.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
