package handler

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/peer"
	"github.com/strata-broker/strata/broker/wire"
)

// Local serves in process the requests this broker sends itself, as a
// Peers for its own id: the transaction marker writer's WriteTxnMarkers
// for the partitions this broker leads, which need no connection. The
// request is handled as one from another broker (client id
// peer.ClientID). Only APIs answering with a response alone are served
// (not Fetch, whose records are file regions).
type Local struct{ Env *Env }

// Request handles req (its version set) and returns the answer, after
// its wait if the handler has one.
func (l Local) Request(ctx context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	name := kmsg.NameForKey(req.Key())
	api, ok := Lookup(req.Key())
	if !ok || !Supported(req.Key(), req.GetVersion()) || req.Key() == kmsg.Fetch.Int16() {
		return nil, fmt.Errorf("%s v%d: not served in process", name, req.GetVersion())
	}
	h := wire.Header{Key: req.Key(), Version: req.GetVersion(), ClientID: peer.ClientID}
	res, err := api.Fn(ctx, l.Env, &Request{Header: h, Body: req})
	if err != nil {
		return nil, fmt.Errorf("%s in process: %w", name, err)
	}
	if res.Later != nil {
		res = res.Later(ctx)
	}
	if res.Resp == nil {
		return nil, fmt.Errorf("%s in process: no answer", name)
	}
	return res.Resp, nil
}
