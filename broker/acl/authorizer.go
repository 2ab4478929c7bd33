package acl

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/metadata"
)

// Config is the authorizer's part of the broker configuration.
type Config struct {
	// SuperUsers are the principals allowed everything (super.users).
	SuperUsers []string
	// AllowEveryoneIfNoACLFound allows a request on a resource no ACL
	// applies to (allow.everyone.if.no.acl.found).
	AllowEveryoneIfNoACLFound bool
}

// Authorizer implements handler.Authorizer, handler.ResourceTypeAuthorizer
// and handler.ACLAdmin over the ACLs of a metadata store. It is safe for
// concurrent use.
type Authorizer struct {
	super      map[string]struct{}
	allowNoACL bool
	cache      *metadata.Cache
	store      metadata.ACLs
	log        *slog.Logger

	idx atomic.Pointer[index]
	mu  sync.Mutex // serialises refresh
}

var (
	_ handler.Authorizer             = (*Authorizer)(nil)
	_ handler.ResourceTypeAuthorizer = (*Authorizer)(nil)
	_ handler.ACLAdmin               = (*Authorizer)(nil)
)

// New returns an authorizer over the ACLs in cache, indexed at once; store
// is where CreateACLs and DeleteACLs write. Run keeps it current.
func New(cfg Config, cache *metadata.Cache, store metadata.ACLs, log *slog.Logger) *Authorizer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Authorizer{super: map[string]struct{}{}, allowNoACL: cfg.AllowEveryoneIfNoACLFound, cache: cache, store: store, log: log}
	for _, p := range cfg.SuperUsers {
		if p = strings.TrimSpace(p); p != "" {
			a.super[p] = struct{}{}
		}
	}
	a.idx.Store(build(nil, 0))
	a.refresh()
	return a
}

// refresh rebuilds the index if the cache's ACLs moved since it was built.
func (a *Authorizer) refresh() {
	a.mu.Lock()
	defer a.mu.Unlock()
	acls, v := a.cache.ACLs()
	if a.idx.Load().version == v {
		return
	}
	a.idx.Store(build(acls, v))
}

// Run rebuilds the index whenever the cache's ACLs change, until ctx ends
// or the cache closes.
func (a *Authorizer) Run(ctx context.Context) {
	for {
		ch := a.cache.Changed()
		a.refresh()
		select {
		case <-ch:
		case <-a.cache.Done():
			return
		case <-ctx.Done():
			return
		}
	}
}

// Authorize reports whether act is allowed. It takes no lock and
// allocates nothing.
func (a *Authorizer) Authorize(act handler.Action) bool {
	if _, ok := a.super[act.Principal]; ok {
		return true
	}
	t := int(act.Type)
	if t < 0 || t >= numTypes {
		return false
	}
	r := &a.idx.Load().types[t]
	m := match{principal: act.Principal, host: act.Host.Unmap(), op: metadata.ACLOperation(act.Op)}
	r.check(&m, act.Name)
	switch {
	case m.denied:
		return false
	case m.allowed:
		return true
	default:
		return !m.found && a.allowNoACL
	}
}

// AuthorizeAny is Kafka's authorizeByResourceType: whether principal may
// do op on at least one resource of type typ. A principal allowed op on a
// resource named "hardcode" (a super user, an ALLOW on "*", or no ACL at
// all with allow.everyone.if.no.acl.found) may; otherwise some ALLOW of
// op (or ALL) for it must not be overridden by a DENY on the same literal
// name or on a prefix of the allowed name; a DENY on "*" refuses.
func (a *Authorizer) AuthorizeAny(principal string, host netip.Addr, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	if a.Authorize(handler.Action{Principal: principal, Host: host, Op: op, Type: typ, Name: "hardcode"}) {
		return true
	}
	t := int(typ)
	if t < 0 || t >= numTypes {
		return false
	}
	host = host.Unmap()
	mop := metadata.ACLOperation(op)
	denyLit, denyPre := map[string]bool{}, map[string]bool{}
	var allowLit, allowPre []string
	all := a.idx.Load().types[t].all
	for i := range all {
		acl, ru := &all[i].acl, &all[i].rule
		if !ru.anyHost && (ru.badHost || ru.host != host) {
			continue
		}
		if !ru.anyPrincipal && ru.principal != principal {
			continue
		}
		if acl.Operation != mop && acl.Operation != metadata.ACLOpAll {
			continue
		}
		lit := acl.PatternType == metadata.ACLPatternLiteral
		if ru.deny {
			switch {
			case lit && acl.ResourceName == metadata.ACLWildcard:
				return false
			case lit:
				denyLit[acl.ResourceName] = true
			default:
				denyPre[acl.ResourceName] = true
			}
			continue
		}
		switch {
		case lit && acl.ResourceName == metadata.ACLWildcard:
			return true
		case lit:
			allowLit = append(allowLit, acl.ResourceName)
		default:
			allowPre = append(allowPre, acl.ResourceName)
		}
	}
	dominated := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPre[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, n := range allowLit {
		if !denyLit[n] && !dominated(n) {
			return true
		}
	}
	for _, n := range allowPre {
		if !dominated(n) {
			return true
		}
	}
	return false
}

// ACLs returns every ACL binding, sorted; the slice is shared.
func (a *Authorizer) ACLs() []metadata.ACL {
	acls, _ := a.cache.ACLs()
	return acls
}

// CreateACLs stores acls and rebuilds the index, so this broker enforces
// them when it returns; the others do once their watch delivers them.
func (a *Authorizer) CreateACLs(ctx context.Context, acls []metadata.ACL) error {
	if _, err := a.store.CreateACLs(ctx, acls); err != nil {
		return fmt.Errorf("acl: create: %w", err)
	}
	a.refresh()
	a.log.Info("ACLs created", "count", len(acls))
	return nil
}

// DeleteACLs removes acls and rebuilds the index.
func (a *Authorizer) DeleteACLs(ctx context.Context, acls []metadata.ACL) error {
	if _, err := a.store.DeleteACLs(ctx, acls); err != nil {
		return fmt.Errorf("acl: delete: %w", err)
	}
	a.refresh()
	a.log.Info("ACLs deleted", "count", len(acls))
	return nil
}
