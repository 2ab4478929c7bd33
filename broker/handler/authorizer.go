package handler

import (
	"net/netip"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer is the seam of Kafka's authorizer: handlers ask it whether a
// connection's principal may do an operation on a resource, and answer the
// *_AUTHORIZATION_FAILED codes when it says no. The broker wires the ACL
// authorizer when authorizer.class.name is set.
type Authorizer interface {
	// Authorize reports whether a is allowed.
	Authorize(a Action) bool
}

// Action is one operation on one resource by one client, as Kafka's
// authorizer sees it.
type Action struct {
	// Principal is the connection's principal ("User:alice").
	Principal string
	// Host is the client's address.
	Host netip.Addr
	// Op is the operation (READ, WRITE, DESCRIBE, ...).
	Op kmsg.ACLOperation
	// Type is the resource's type (TOPIC, GROUP, CLUSTER,
	// TRANSACTIONAL_ID, ...).
	Type kmsg.ACLResourceType
	// Name is the resource's name ("kafka-cluster" for the cluster).
	Name string
}
