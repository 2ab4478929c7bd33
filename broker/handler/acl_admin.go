package handler

import (
	"context"

	"github.com/strata-broker/strata/metadata"
)

// ACLAdmin is what an Authorizer that keeps ACLs offers besides
// Authorize, as Kafka's Authorizer has createAcls, deleteAcls and acls:
// CreateAcls, DeleteAcls and DescribeAcls work through it, and answer
// SECURITY_DISABLED when Env.Authorizer is nil or does not implement it.
type ACLAdmin interface {
	// ACLs returns every stored ACL binding in metadata.CompareACLs
	// order; the slice is shared, not to be modified.
	ACLs() []metadata.ACL
	// CreateACLs stores acls (each concrete); existing ones stay. When it
	// returns, this broker enforces them.
	CreateACLs(ctx context.Context, acls []metadata.ACL) error
	// DeleteACLs removes acls; missing ones are ignored. When it returns,
	// this broker no longer enforces them.
	DeleteACLs(ctx context.Context, acls []metadata.ACL) error
}
