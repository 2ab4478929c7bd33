package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/coordshard"
	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/producerid"
	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/broker/txnmarkers"
)

// startTxn builds the transaction coordinator: producer ids from the
// broker's one allocator (shared with InitProducerId's idempotent
// producers through handler.Env), markers written by a txnmarkers.Writer
// through the peer client, or in process for the partitions this broker
// leads, fenced by the coordinator's own epoch check.
func (s *Server) startTxn(n *node) {
	n.pids = producerid.New(n.store)
	var coord *txn.Coordinator
	n.markers = txnmarkers.New(txnmarkers.Config{
		NodeID: s.cfg.NodeID, Cache: n.store.Cache(), Peers: n.peers, Local: localPeer{n},
		Current: func(m txn.Markers) bool { return coord.Current(m) }, Log: s.log,
	})
	coord = txn.New(txn.ConfigFrom(s.cfg), n.pids, n.markers, s.log)
	n.txn = coord
	n.metrics.MustRegister(newCoordinatorCollector(coord.Stats, func() coordshard.LoadStats {
		if n.groups == nil {
			return coordshard.LoadStats{}
		}
		return n.groups.Loads()
	}))
}

// errNotServing answers a request sent in process before the Kafka
// server built the handlers' Env: a transaction resumed by a load that
// early has its markers retried by the writer.
var errNotServing = errors.New("broker: not serving requests yet")

// localPeer serves this broker's requests to itself in process
// (handler.Local) once the Kafka server runs.
type localPeer struct{ n *node }

func (l localPeer) Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	env := l.n.env.Load()
	if env == nil {
		return nil, errNotServing
	}
	return handler.Local{Env: env}.Request(ctx, id, req)
}
