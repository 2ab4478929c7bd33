package handler

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// Authorization: each handler checks the operations and resources of
// Kafka's operation table (KafkaApis) through these helpers, and answers
// TOPIC_, GROUP_, CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED as
// Kafka does. With no Env.Authorizer every check is one nil comparison
// (per topic, for the APIs that name several): no allocation, no lookup,
// no Action built. A request without a connection
// (Local: the broker's own requests to itself) is the broker's and is
// always allowed; other brokers reach this one over the network and
// authenticate as any client, so their principal needs CLUSTER_ACTION
// (or super.users), as in Kafka.

// notRequested is the authorized-operations value of a response that was
// not asked for them (Kafka's INT32_MIN).
const notRequested = math.MinInt32

// Short names for the resource types and operations of the checks.
const (
	resTopic   = kmsg.ACLResourceTypeTopic
	resGroup   = kmsg.ACLResourceTypeGroup
	resCluster = kmsg.ACLResourceTypeCluster
	resTxnID   = kmsg.ACLResourceTypeTransactionalId

	aclRead            = kmsg.ACLOperationRead
	aclWrite           = kmsg.ACLOperationWrite
	aclCreate          = kmsg.ACLOperationCreate
	aclDelete          = kmsg.ACLOperationDelete
	aclAlter           = kmsg.ACLOperationAlter
	aclDescribe        = kmsg.ACLOperationDescribe
	aclClusterAction   = kmsg.ACLOperationClusterAction
	aclDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	aclAlterConfigs    = kmsg.ACLOperationAlterConfigs
	aclIdempotentWrite = kmsg.ACLOperationIdempotentWrite
)

// allowed reports whether the request's principal may do op on the
// resource typ/name; always true without an authorizer.
func (e *Env) allowed(req *Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return e.Authorizer == nil || e.authorize(req, op, typ, name)
}

// authorize asks the authorizer (which must be set).
func (e *Env) authorize(req *Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if req.Conn == nil {
		return true // the broker's own request, served in process
	}
	return e.Authorizer.Authorize(Action{Principal: req.Conn.principal(), Host: req.Conn.Host, Op: op, Type: typ, Name: name})
}

// principal is the connection's principal as the authorizer sees it: on
// a SASL listener the authenticated one, also for a client that
// authenticated with bare tokens after a v0 SaslHandshake (kafka-python),
// which leaves Principal as it was.
func (c *Conn) principal() string {
	if c.SASL != nil {
		if p := c.SASL.Principal(); p != "" {
			return p
		}
	}
	return c.Principal
}

// allowedCluster is allowed for op on the cluster.
func (e *Env) allowedCluster(req *Request, op kmsg.ACLOperation) bool {
	return e.allowed(req, op, resCluster, clusterResource)
}

// allowedTopic is allowed for op on a topic.
func (e *Env) allowedTopic(req *Request, op kmsg.ACLOperation, topic string) bool {
	return e.allowed(req, op, resTopic, topic)
}

// allowedGroup is allowed for op on a group.
func (e *Env) allowedGroup(req *Request, op kmsg.ACLOperation, group string) bool {
	return e.allowed(req, op, resGroup, group)
}

// allowedTxnID is allowed for op on a transactional id.
func (e *Env) allowedTxnID(req *Request, op kmsg.ACLOperation, id string) bool {
	return e.allowed(req, op, resTxnID, id)
}

// allowedAnyOfType is Kafka's authorizeByResourceType: op on some
// resource of typ (see ResourceTypeAuthorizer; an Authorizer that is not
// one is asked about the resource "*").
func (e *Env) allowedAnyOfType(req *Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	if e.Authorizer == nil || req.Conn == nil {
		return true
	}
	if ra, ok := e.Authorizer.(ResourceTypeAuthorizer); ok {
		return ra.AuthorizeAny(req.Conn.principal(), req.Conn.Host, op, typ)
	}
	return e.authorize(req, op, typ, "*")
}

// authorizedOps are the operations Kafka supports on each resource type
// (AclEntry.supportedOperations), whose bits authorized-operations fields
// carry.
var authorizedOps = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	resTopic:   {aclRead, aclWrite, aclCreate, aclDescribe, aclDelete, aclAlter, aclDescribeConfigs, aclAlterConfigs},
	resGroup:   {aclRead, aclDescribe, aclDelete},
	resCluster: {aclCreate, aclClusterAction, aclDescribeConfigs, aclAlterConfigs, aclIdempotentWrite, aclAlter, aclDescribe},
	resTxnID:   {aclDescribe, aclWrite},
}

// authorizedOperations is the bit field (bit n for operation code n) of
// the operations the request's principal may do on typ/name, of those
// Kafka supports on typ (KIP-430); all of them without an authorizer.
func (e *Env) authorizedOperations(req *Request, typ kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range authorizedOps[typ] {
		if e.allowed(req, op, typ, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// clusterAuthorizedOperations is authorizedOperations of the cluster for
// a principal that may DESCRIBE it, 0 for one that may not (as Kafka's
// Metadata and DescribeCluster answer).
func (e *Env) clusterAuthorizedOperations(req *Request) int32 {
	if !e.allowedCluster(req, aclDescribe) {
		return 0
	}
	return e.authorizedOperations(req, resCluster, clusterResource)
}

// authorizedOperationsIf is authorizedOperations when the request asked
// for them, notRequested otherwise.
func (e *Env) authorizedOperationsIf(asked bool, req *Request, typ kmsg.ACLResourceType, name string) int32 {
	if !asked {
		return notRequested
	}
	return e.authorizedOperations(req, typ, name)
}

// topicName is the name of a topic a request names by name or by id: the
// resolved topic's when it is known, else the name given.
func topicName(name string, t metadata.Topic, ok bool) string {
	if ok {
		return t.Name
	}
	return name
}
