// Package acl is Strata's authorizer (authorizer.class.name): it decides,
// from the ACL bindings the metadata store keeps (etcd, watched by every
// broker), whether a principal may do an operation on a resource, with
// the semantics of Kafka's StandardAuthorizer:
//
//   - a principal in super.users may do everything;
//   - the ACLs that apply to a resource are the LITERAL ones of its name,
//     the LITERAL ones named "*" and the PREFIXED ones whose name is a
//     prefix of its name; of those, an ACL matches when its principal is
//     the client's or "User:*", its host the client's address or "*", and
//     its operation the one asked or ALL;
//   - a matching DENY wins over any ALLOW; an ALLOW of READ, WRITE, DELETE
//     or ALTER also allows DESCRIBE, and ALLOW ALTER_CONFIGS allows
//     DESCRIBE_CONFIGS (DENY rules imply nothing);
//   - with no matching ACL the answer is no, unless no ACL applies to the
//     resource at all and allow.everyone.if.no.acl.found is set.
//
// Index: the ACLs are indexed by resource type, then LITERAL by name in a
// map, the "*" ones apart, and PREFIXED by prefix in a map together with
// the set of distinct prefix lengths, so finding the prefixes of a name is
// one map look-up per distinct length, not a scan of the ACLs. The index
// is immutable and held in an atomic pointer; Run rebuilds it whenever
// the Cache's ACL set changes (and CreateACLs and DeleteACLs right after
// their write), so Authorize takes no lock and allocates nothing.
package acl
