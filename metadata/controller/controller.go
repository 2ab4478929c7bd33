package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/etcdstore"
)

// Defaults for zero Options fields, Kafka's where Kafka has the setting.
const (
	// DefaultSessionTTL is Kafka's broker.session.timeout.ms.
	DefaultSessionTTL = 9 * time.Second
	// DefaultRebalanceInterval is Kafka's leader.imbalance.check.interval.seconds.
	DefaultRebalanceInterval = 300 * time.Second
	// DefaultImbalancePercent is Kafka's leader.imbalance.per.broker.percentage.
	DefaultImbalancePercent = 10
)

// Retry backoff of Run (campaign failures) and of failed reconcile passes.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// Sentinel errors. The broker maps them to Kafka codes at its edge.
var (
	// ErrNotController: the call needs the active controller and this
	// Controller is not it (NOT_CONTROLLER).
	ErrNotController = errors.New("controller: not the active controller")
	// ErrAlreadyRunning: Run was called while another Run is active.
	ErrAlreadyRunning = errors.New("controller: already running")
)

// Why a term ended, besides ctx and fencing.
var (
	errSessionLost     = errors.New("controller: election session lost (lease expired or etcd unreachable)")
	errCampaignKeyGone = errors.New("controller: campaign key deleted")
	errCampaignWatch   = errors.New("controller: campaign key watch broke")
)

// Options tune a Controller. The zero value is usable.
type Options struct {
	// Log receives the controller's logs; nil means slog.Default().
	Log *slog.Logger
	// SessionTTL is the lease TTL of the election session (rounded up to
	// whole seconds): how long a crashed controller holds the role. Zero
	// means DefaultSessionTTL.
	SessionTTL time.Duration
	// UncleanLeaderElection is the broker default of
	// unclean.leader.election.enable; a topic override wins.
	UncleanLeaderElection bool
	// AutoLeaderRebalance enables the periodic preferred-leader election
	// (auto.leader.rebalance.enable).
	AutoLeaderRebalance bool
	// RebalanceInterval is the period of that check; zero means
	// DefaultRebalanceInterval.
	RebalanceInterval time.Duration
	// ImbalancePercent: a broker's preferred partitions are moved back
	// once more than this share of them is led elsewhere; zero means
	// DefaultImbalancePercent.
	ImbalancePercent int
}

// OptionsFromConfig takes the controller's settings from a broker config:
// broker.session.timeout.ms, unclean.leader.election.enable,
// auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds and
// leader.imbalance.per.broker.percentage.
func OptionsFromConfig(cfg *config.Broker, log *slog.Logger) Options {
	return Options{
		Log:                   log,
		SessionTTL:            time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		UncleanLeaderElection: cfg.UncleanLeaderElectionEnable,
		AutoLeaderRebalance:   cfg.AutoLeaderRebalanceEnable,
		RebalanceInterval:     time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		ImbalancePercent:      int(cfg.LeaderImbalancePerBrokerPercentage),
	}
}

// Controller is one broker's candidacy for the controller role and, while
// elected, the controller itself. Create it with New and start it with Run.
type Controller struct {
	store *etcdstore.Store
	cache *metadata.Cache
	id    int32
	opts  Options
	log   *slog.Logger

	running atomic.Bool

	mu      sync.Mutex
	term    *etcdstore.Fence // the current term while elected, else nil
	epoch   int32            // epoch of the last term won
	changed chan struct{}    // closed and replaced when term changes
}

// New returns the controller candidate of broker nodeID on store.
func New(store *etcdstore.Store, nodeID int32, opts Options) *Controller {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.RebalanceInterval <= 0 {
		opts.RebalanceInterval = DefaultRebalanceInterval
	}
	if opts.ImbalancePercent <= 0 {
		opts.ImbalancePercent = DefaultImbalancePercent
	}
	return &Controller{
		store:   store,
		cache:   store.Cache(),
		id:      nodeID,
		opts:    opts,
		log:     opts.Log.With("component", "controller", "node", nodeID),
		changed: make(chan struct{}),
	}
}

// Run is New(store, nodeID, Options{Log: log}).Run(ctx).
func Run(ctx context.Context, store *etcdstore.Store, nodeID int32, log *slog.Logger) error {
	return New(store, nodeID, Options{Log: log}).Run(ctx)
}

// Run campaigns for the controller role and, whenever elected, acts as
// the controller until the term ends; then it campaigns again. It returns
// nil when ctx ends (after stepping down, so another broker takes over at
// once) and an error wrapping metadata.ErrClosed when the store closed.
func (c *Controller) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer c.running.Store(false)
	backoff := retryMin
	for {
		err := c.serveTerm(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case c.store.Client().Ctx().Err() != nil:
			return fmt.Errorf("controller: store connection: %w", metadata.ErrClosed)
		case err == nil:
			backoff = retryMin
			continue
		}
		c.log.Warn("controller term ended; campaigning again", "err", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, retryMax)
	}
}

// serveTerm opens an election session, campaigns, and if elected claims
// the role and leads until the session or ctx ends. The session's lease is
// revoked on return, which withdraws the campaign key and the controller
// record at once.
func (c *Controller) serveTerm(ctx context.Context) error {
	cli := c.store.Client()
	secs := max(int64((c.opts.SessionTTL+time.Second-1)/time.Second), 1)
	lease, err := cli.Grant(ctx, secs)
	if err != nil {
		return fmt.Errorf("controller: grant session lease: %w", err)
	}
	// The session keeps the lease alive on the client's context, so that
	// Close can still revoke it after ctx ended.
	sess, err := concurrency.NewSession(cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(secs)))
	if err != nil {
		revoke(cli, lease.ID)
		return fmt.Errorf("controller: open election session: %w", err)
	}
	defer func() {
		if err := sess.Close(); err != nil && cli.Ctx().Err() == nil {
			c.log.Warn("controller: revoke election session", "err", err)
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, below
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wg.Go(func() { // the term ends with the session
		select {
		case <-sess.Done():
			cancel(errSessionLost)
		case <-tctx.Done():
		}
	})

	el := concurrency.NewElection(sess, c.store.ControllerElectionPrefix())
	if err := el.Campaign(tctx, strconv.FormatInt(int64(c.id), 10)); err != nil {
		if cause := context.Cause(tctx); cause != nil && ctx.Err() == nil {
			err = cause
		}
		return fmt.Errorf("controller: campaign: %w", err)
	}
	fence, rev, err := c.store.ClaimController(tctx, el.Key(), el.Rev(), c.id, sess.Lease())
	if err != nil {
		return fmt.Errorf("controller: claim: %w", err)
	}
	// The term also ends if the campaign key vanishes while the session
	// lives (an operator deleted it): step down rather than run fenced.
	wg.Go(func() { watchCampaignKey(tctx, cli, el.Key(), rev, cancel) })
	// Decide from a cache at least as new as the claim.
	if err := c.cache.WaitRevision(tctx, rev); err != nil {
		return fmt.Errorf("controller: catch up to revision %d: %w", rev, err)
	}
	c.setTerm(&fence)
	defer c.setTerm(nil)
	c.log.Info("elected controller", "epoch", fence.Epoch)
	err = c.lead(tctx, fence)
	c.log.Info("controller term over", "epoch", fence.Epoch, "reason", context.Cause(tctx), "err", err)
	switch {
	case errors.Is(err, etcdstore.ErrFenced) || ctx.Err() != nil:
		return nil
	case tctx.Err() != nil:
		return context.Cause(tctx)
	default:
		return err
	}
}

// watchCampaignKey ends the term (cancel) when key is deleted after rev,
// or when the watch breaks and so nothing proves the key is still there.
// It returns when ctx ends.
func watchCampaignKey(ctx context.Context, cli *clientv3.Client, key string, rev int64, cancel context.CancelCauseFunc) {
	for wr := range cli.Watch(ctx, key, clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil || wr.Canceled {
			cancel(fmt.Errorf("%w: %v", errCampaignWatch, err))
			return
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				cancel(errCampaignKeyGone)
				return
			}
		}
	}
}

// revoke drops a lease that never got a session, best effort.
func revoke(cli *clientv3.Client, id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(cli.Ctx(), retryMax)
	defer cancel()
	_, _ = cli.Revoke(ctx, id)
}

// setTerm publishes the current term (nil: not elected).
func (c *Controller) setTerm(f *etcdstore.Fence) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.term = f
	if f != nil {
		c.epoch = f.Epoch
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// fence returns the current term's fence, or ErrNotController.
func (c *Controller) fence() (etcdstore.Fence, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.term == nil {
		return etcdstore.Fence{}, fmt.Errorf("broker %d: %w", c.id, ErrNotController)
	}
	return *c.term, nil
}

// ID is the broker id this controller campaigns for.
func (c *Controller) ID() int32 { return c.id }

// IsLeader reports whether this broker is the active controller. A
// deposed controller may believe it a little longer than it is true (until
// its session notices), but none of its writes can succeed then.
func (c *Controller) IsLeader() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.term != nil
}

// Epoch is the controller epoch of the last term this broker won (0 if
// it never won).
func (c *Controller) Epoch() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// Changed returns a channel closed at the next gain or loss of the
// controller role.
func (c *Controller) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}
