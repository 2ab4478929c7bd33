package handler

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/strata-broker/strata/broker/fetchsession"
	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/producerid"
	"github.com/strata-broker/strata/broker/quota"
	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Store is what handlers change in the metadata store; they read it
// through Env.Cache. The broker passes its etcdstore.Store, in-process
// tests a memstore.Store.
type Store interface {
	metadata.Topics
	metadata.BrokerConfigs
	metadata.ScramCredentials
	metadata.ClientQuotas
	metadata.ProducerIDs
	PutReassignment(ctx context.Context, r metadata.Reassignment) error
	Reassignments(ctx context.Context) ([]metadata.Reassignment, error)
	// ClusterID is the cluster's id.
	ClusterID() string
}

// Peers sends requests to other brokers (broker/peer.Client).
type Peers interface {
	// Request sends req, its version set, to broker id and returns the
	// response.
	Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error)
}

// Env is what handlers share: configuration, metadata and partitions.
type Env struct {
	// Cfg is the broker's configuration: static, and dynamic as it
	// changes at run time (a goroutine of the broker follows the dynamic
	// configs into it). Handlers read the effective one through cfg.
	Cfg        *config.Live
	Store      Store
	Cache      *metadata.Cache
	Partitions *partition.Manager
	Groups     *group.Coordinator // the consumer-group coordinator
	// Txn is the transaction coordinator; nil: transactional producers
	// are refused, as before it was wired.
	Txn *txn.Coordinator
	// ProducerIDs is the broker's producer-id allocator, shared with the
	// transaction coordinator; nil: one is built over Store on first use.
	ProducerIDs *producerid.Allocator
	// Controller tells which broker is the elected controller.
	Controller *controller.Observer
	// Elector is this broker's controller candidate: it runs ElectLeaders'
	// elections while it is the active controller. Nil: never.
	Elector *controller.Controller
	// Peers sends requests to other brokers: ElectLeaders is forwarded to
	// the controller through it. Nil: nothing is forwarded.
	Peers Peers
	// Sessions holds the incremental fetch sessions; nil: none are opened.
	Sessions *fetchsession.Cache
	Log      *slog.Logger
	Metrics  *Metrics
	// Self is this broker as clients should reach it.
	Self metadata.Broker
	// Authorizer decides which principal may do what (Kafka's
	// authorizer.class.name); nil: every request is allowed, as Kafka
	// without an authorizer.
	Authorizer Authorizer
	// Quotas measures clients against their client quotas (the broker
	// throttles their responses); nil: no quotas are enforced.
	Quotas *quota.Manager
	// Draining is closed when the broker stops serving: requests already
	// read are still answered, and waits (a Fetch's long poll) end early.
	Draining <-chan struct{}

	pidOnce sync.Once
	pids    *producerid.Allocator
}

// Request is a decoded request with its header.
type Request struct {
	Header wire.Header
	Body   kmsg.Request
	// Bytes is the request's size on the wire.
	Bytes int
	// Conn is the connection the request came on (nil in tests that
	// call handlers directly: the first listener's view).
	Conn *Conn
}

// Conn is what a handler knows of a client connection.
type Conn struct {
	// Listener is the name of the listener the connection came in on:
	// Metadata, FindCoordinator and DescribeCluster answer with the
	// brokers' endpoints of that listener.
	Listener string
	// Principal is the authenticated client ("User:CN=alice,O=Acme" from
	// a TLS client certificate, mapped by ssl.principal.mapping.rules;
	// "User:ANONYMOUS" otherwise), for the authorizer. On a SASL listener
	// it becomes the SASL principal ("User:alice") once the client has
	// authenticated, and no other request is handled before that.
	Principal string
	// Host is the client's IP address, for ACLs' host field (the zero
	// Addr when unknown: a test calling handlers directly).
	Host netip.Addr
	// SASL is the authentication state on a SASL_PLAINTEXT or SASL_SSL
	// listener; nil on others.
	SASL *Auth
}

// listener is the name of the request's listener ("": none known).
func (r *Request) listener() string {
	if r.Conn == nil {
		return ""
	}
	return r.Conn.Listener
}

// endpoint is broker b's address for clients of listener ("": the
// broker's registered Host and Port); false when b has no such listener.
func endpoint(b metadata.Broker, listener string) (host string, port int32, ok bool) {
	if listener == "" {
		return b.Host, b.Port, true
	}
	e, ok := b.Endpoint(listener)
	return e.Host, e.Port, ok
}

// Result is a handler's answer. A nil Resp means no response is sent (a
// produce with acks=0). Regions, with Marker, carry file-backed record bytes.
type Result struct {
	Resp    kmsg.Response
	Marker  *wire.Marker
	Regions []wire.Region
	// Later, when set, finishes the request off the connection's reading
	// goroutine (a produce waiting for acks=all); its Result is sent, still
	// in request order.
	Later func(ctx context.Context) Result
	// Close closes the connection once Resp is written (a failed SASL
	// authentication).
	Close bool
}

// Func handles one request.
type Func func(ctx context.Context, env *Env, req *Request) (Result, error)

// SelfBroker builds the broker's advertised identity from its config and
// the addresses its listeners are bound to, by listener name (for port 0
// listeners and an empty or wildcard host): one endpoint per advertised
// listener, and Host and Port those of the inter-broker listener.
func SelfBroker(cfg *config.Broker, bound map[string]string) metadata.Broker {
	b := metadata.Broker{ID: cfg.NodeID, Rack: cfg.Rack}
	for _, l := range cfg.KafkaListeners {
		if l.Advertised == "" {
			continue
		}
		host, port, _ := net.SplitHostPort(l.Advertised)
		if port == "0" || port == "" {
			_, port, _ = net.SplitHostPort(bound[l.Name])
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host, _, _ = net.SplitHostPort(bound[l.Name])
		}
		p, _ := strconv.Atoi(port)
		e := metadata.Endpoint{Listener: l.Name, Host: host, Port: int32(p), SecurityProtocol: l.Protocol}
		b.Endpoints = append(b.Endpoints, e)
		if l.Name == cfg.InterBrokerListenerName {
			b.Host, b.Port = e.Host, e.Port
		}
	}
	return b
}

// ControllerID is the elected controller's broker id, or this broker's
// while none is known yet (clients need some broker to send admin
// requests to; Strata's brokers all accept them).
func (e *Env) ControllerID() int32 {
	if e.Controller != nil {
		if id := e.Controller.ControllerID(); id >= 0 {
			return id
		}
	}
	return e.cfg().NodeID
}

// cfg is the broker's effective configuration now. A handler that reads
// several keys takes it once, so that they come from one configuration.
func (e *Env) cfg() *config.Broker { return e.Cfg.Load() }

// draining reports whether the broker stopped serving (see Draining).
func (e *Env) draining() bool { return metadata.IsClosed(e.Draining) }
