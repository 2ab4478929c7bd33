package handler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
)

// errInvalidReplicationFactor means a topic asked for fewer than one
// replica, or more than there are live brokers (INVALID_REPLICATION_FACTOR).
var errInvalidReplicationFactor = errors.New("handler: invalid replication factor")

// errInvalidReplicaAssignment means a manual assignment is malformed.
var errInvalidReplicaAssignment = errors.New("handler: invalid replica assignment")

// errInvalidRequest means a request contradicts itself (INVALID_REQUEST):
// a topic named twice, by name and id at once, or by neither.
var errInvalidRequest = errors.New("handler: invalid request")

// topicSpec is a topic to create, as CreateTopics or auto-creation asks.
type topicSpec struct {
	name       string
	partitions int32 // -1: num.partitions
	rf         int16 // -1: default.replication.factor
	assignment map[int32][]int32
	configs    map[string]string
}

// createTopic validates and, unless validateOnly, creates a topic, waiting
// until this broker serves its partitions.
func (e *Env) createTopic(ctx context.Context, spec topicSpec, validateOnly bool) (metadata.Topic, error) {
	if err := metadata.ValidateTopicName(spec.name); err != nil {
		return metadata.Topic{}, err
	}
	if err := e.checkCollision(spec.name); err != nil {
		return metadata.Topic{}, err
	}
	if err := e.cfg().ValidateTopic(spec.configs); err != nil {
		return metadata.Topic{}, err
	}
	parts, err := e.place(spec, 0)
	if err != nil {
		return metadata.Topic{}, err
	}
	if err := e.checkPartitionLimits(replicaCounts(parts)); err != nil {
		return metadata.Topic{}, err
	}
	t := metadata.Topic{Name: spec.name, ID: metadata.NewTopicID(), Configs: spec.configs, Partitions: parts}
	if validateOnly {
		if _, exists := e.Cache.Topic(spec.name); exists {
			return t, metadata.ErrTopicExists
		}
		return t, t.Validate()
	}
	if _, err := e.Store.CreateTopic(ctx, t); err != nil {
		return metadata.Topic{}, err
	}
	if err := e.Partitions.Sync(); err != nil {
		e.Log.Error("open partitions of new topic", "topic", t.Name, "err", err)
	}
	return t, nil
}

// checkCollision refuses a name that differs from an existing topic's
// only in '.' against '_', as Kafka does: both map to the same metric
// names.
func (e *Env) checkCollision(name string) error {
	if !strings.ContainsAny(name, "._") {
		return nil
	}
	norm := collisionName(name)
	for _, t := range e.Cache.Topics() {
		if t.Name != name && collisionName(t.Name) == norm {
			return fmt.Errorf("%w: topic %q collides with existing topic %q", metadata.ErrInvalidTopic, name, t.Name)
		}
	}
	return nil
}

func collisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// place assigns replicas to partitions from index `from` on: the manual
// assignment when given, else round-robin over the live brokers with the
// leaders spread evenly.
func (e *Env) place(spec topicSpec, from int32) (map[int32]metadata.PartitionState, error) {
	brokers := e.Cache.Brokers()
	ids := make([]int32, 0, len(brokers))
	for _, b := range brokers {
		ids = append(ids, b.ID)
	}
	parts := map[int32]metadata.PartitionState{}
	if len(spec.assignment) > 0 {
		if err := checkPartitionCount(int32(len(spec.assignment))); err != nil {
			return nil, err
		}
		// Kafka's validateManualPartitionAssignment: every partition has
		// the topic's replication factor (spec.rf, else the first
		// partition's), in distinct live brokers.
		rf := int(spec.rf)
		for i := from; i < from+int32(len(spec.assignment)); i++ {
			reps, ok := spec.assignment[i]
			if !ok || len(reps) == 0 {
				return nil, fmt.Errorf("%w: partition %d", errInvalidReplicaAssignment, i)
			}
			if rf <= 0 {
				rf = len(reps)
			}
			if len(reps) != rf {
				return nil, fmt.Errorf("%w: partition %d has %d replicas, the others %d", errInvalidReplicaAssignment, i, len(reps), rf)
			}
			for j, r := range reps {
				if !slices.Contains(ids, r) {
					return nil, fmt.Errorf("%w: broker %d is not live", errInvalidReplicaAssignment, r)
				}
				if slices.Contains(reps[:j], r) {
					return nil, fmt.Errorf("%w: partition %d names broker %d twice", errInvalidReplicaAssignment, i, r)
				}
			}
			parts[i] = newPartitionState(reps)
		}
		return parts, nil
	}
	n, rf := spec.partitions, spec.rf
	if n == -1 {
		n = e.cfg().NumPartitions
	}
	if rf == -1 {
		rf = e.cfg().DefaultReplicationFactor
	}
	if err := checkCounts(n, rf); err != nil {
		return nil, err
	}
	parts, err := controller.PlaceRange(brokers, from, n, rf, -1)
	if errors.Is(err, controller.ErrInvalidReplicationFactor) {
		return nil, fmt.Errorf("%w: replication factor %d is larger than the number of live brokers (%d)", errInvalidReplicationFactor, rf, len(brokers))
	}
	return parts, err
}

// checkCounts refuses, with Kafka's messages, a replication factor or
// partition count (the -1 defaults resolved) that is not positive, and
// more new partitions than one metadata write holds.
func checkCounts(n int32, rf int16) error {
	switch {
	case rf < 1:
		return fmt.Errorf("%w: Replication factor must be larger than 0, or -1 to use the default value", errInvalidReplicationFactor)
	case n < 1:
		return fmt.Errorf("%w: Number of partitions was set to an invalid non-positive value", metadata.ErrInvalidPartitions)
	}
	return checkPartitionCount(n)
}

// checkPartitionCount refuses more new partitions than one metadata write
// holds (POLICY_VIOLATION, as Kafka's controller refuses an operation of
// more records than its limit), before anything is placed or written.
func checkPartitionCount(n int32) error {
	if n > metadata.MaxPartitionsPerWrite {
		return fmt.Errorf("%w: %d new partitions in one request; at most %d are created at once", metadata.ErrTooLarge, n, metadata.MaxPartitionsPerWrite)
	}
	return nil
}

func newPartitionState(replicas []int32) metadata.PartitionState {
	return metadata.PartitionState{
		Replicas: slices.Clone(replicas),
		Leader:   replicas[0],
		ISR:      slices.Clone(replicas),
	}
}

// autoCreate creates a topic with broker defaults if
// auto.create.topics.enable, an internal topic as the broker creates it
// (internalTopic). A topic another request created meanwhile is no error.
func (e *Env) autoCreate(ctx context.Context, name string) error {
	if isInternalTopic(name) {
		_, err := e.internalTopic(ctx, name)
		return err
	}
	t, err := e.createTopic(ctx, topicSpec{name: name, partitions: -1, rf: -1}, false)
	switch {
	case errors.Is(err, metadata.ErrTopicExists):
		return nil
	case err != nil:
		return err
	}
	e.Log.Info("auto-created topic", "topic", name, "partitions", len(t.Partitions))
	return nil
}
