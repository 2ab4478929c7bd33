package handler

import (
	"net/netip"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ResourceTypeAuthorizer is what an Authorizer may offer besides
// Authorize: Kafka's authorizeByResourceType, which asks whether the
// principal may do op on at least one resource of a type (any
// transactional id, for an idempotent producer without
// IDEMPOTENT_WRITE on the cluster). Handlers type-assert Env.Authorizer
// to it; an Authorizer without it is asked about the resource named "*"
// instead.
type ResourceTypeAuthorizer interface {
	// AuthorizeAny reports whether principal, from host, may do op on
	// some resource of type typ.
	AuthorizeAny(principal string, host netip.Addr, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool
}
