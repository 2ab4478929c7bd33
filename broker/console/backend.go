package console

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/wire"
)

// clientID is the client id of the requests the console runs.
const clientID = "strata-console"

// backend runs a console user's requests: through this broker's handlers
// in process, with a Conn carrying the user's principal, or through the
// peer client for what only another broker answers.
type backend struct {
	env       *handler.Env
	principal string
	host      netip.Addr
	// asBroker runs local requests with the broker's own authority (no
	// Conn), for views gathered once and shared by every user.
	asBroker bool
}

// self is this broker's id.
func (b *backend) self() int32 { return b.env.Self.ID }

// allowed asks the broker's authorizer whether the user may do op on a
// resource; with no authorizer everything is.
func (b *backend) allowed(op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if b.env.Authorizer == nil {
		return true
	}
	return b.env.Authorizer.Authorize(handler.Action{Principal: b.principal, Host: b.host, Op: op, Type: typ, Name: name})
}

// errDenied is an action the authorizer refused.
var errDenied = errors.New("not authorized")

// local runs req through this broker's handler for its key, at its
// version or, when unset (0), the highest both sides know, as a request
// of the console user.
func (b *backend) local(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	name := kmsg.NameForKey(req.Key())
	api, ok := handler.Lookup(req.Key())
	if !ok || req.Key() == kmsg.Fetch.Int16() {
		return nil, fmt.Errorf("%s: not served in process", name)
	}
	if req.GetVersion() == 0 { // unset: the highest both know
		req.SetVersion(min(api.Max, req.MaxVersion()))
	}
	h := wire.Header{Key: req.Key(), Version: req.GetVersion(), ClientID: clientID}
	r := &handler.Request{Header: h, Body: req}
	if !b.asBroker {
		r.Conn = &handler.Conn{Listener: b.env.Cfg.Load().InterBrokerListenerName, Principal: b.principal, Host: b.host}
	}
	res, err := api.Fn(ctx, b.env, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.Later != nil {
		res = res.Later(ctx)
	}
	if res.Resp == nil {
		return nil, fmt.Errorf("%s: no answer", name)
	}
	return res.Resp, nil
}

// on runs req on broker id: in process for this broker, else over the
// peer client (whose connection authenticates as the broker; the
// console checks the user's ACLs before it asks).
func (b *backend) on(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	if id == b.self() {
		return b.local(ctx, req)
	}
	if b.env.Peers == nil {
		return nil, fmt.Errorf("broker %d: no peer client", id)
	}
	if req.GetVersion() == 0 {
		if api, ok := handler.Lookup(req.Key()); ok {
			req.SetVersion(min(api.Max, req.MaxVersion()))
		}
	}
	res, err := b.env.Peers.Request(ctx, id, req)
	if err != nil {
		return nil, fmt.Errorf("broker %d: %s: %w", id, kmsg.NameForKey(req.Key()), err)
	}
	return res, nil
}
