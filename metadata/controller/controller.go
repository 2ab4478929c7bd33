package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
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

// Options tune a Controller. The zero value is usable.
type Options struct {
	// Log receives the controller's logs; nil means slog.Default().
	Log *slog.Logger
	// SessionTTL is the lease TTL of the election session (rounded up to
	// whole seconds): how long a crashed controller holds the role. Zero
	// means DefaultSessionTTL.
	SessionTTL time.Duration
	// Config is the static broker configuration topics' settings resolve
	// against (unclean.leader.election.enable: a topic override, else the
	// broker default, dynamic or static); nil means Kafka's defaults. The
	// dynamic broker configs come from the store's cache.
	Config *config.Broker
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
		Log:                 log,
		SessionTTL:          time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		Config:              cfg,
		AutoLeaderRebalance: cfg.AutoLeaderRebalanceEnable,
		RebalanceInterval:   time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		ImbalancePercent:    int(cfg.LeaderImbalancePerBrokerPercentage),
	}
}

// Store is what the controller needs of the metadata store: the election
// (whose Term carries the fenced writes), the reassignment requests, and
// the cache it decides from.
type Store interface {
	metadata.ControllerElection
	metadata.Reassignments
	Cache() *metadata.Cache
}

// Controller is one broker's candidacy for the controller role and, while
// elected, the controller itself. Create it with New and start it with Run.
type Controller struct {
	store Store
	cache *metadata.Cache
	id    int32
	opts  Options
	log   *slog.Logger

	running atomic.Bool

	mu      sync.Mutex
	term    metadata.Term // the current term while elected, else nil
	epoch   int32         // epoch of the last term won
	changed chan struct{} // closed and replaced when term changes
}

// New returns the controller candidate of broker nodeID on store.
func New(store Store, nodeID int32, opts Options) *Controller {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Config == nil {
		opts.Config = config.Default()
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
func Run(ctx context.Context, store Store, nodeID int32, log *slog.Logger) error {
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
		case metadata.IsClosed(c.cache.Done()) || errors.Is(err, metadata.ErrClosed):
			return fmt.Errorf("controller: store: %w", metadata.ErrClosed)
		case err == nil:
			backoff = retryMin
			continue
		}
		c.retryFailed("controller term ended; campaigning again", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-c.cache.Done():
			t.Stop()
			return fmt.Errorf("controller: store: %w", metadata.ErrClosed)
		case <-t.C:
		}
		backoff = min(2*backoff, retryMax)
	}
}

// serveTerm campaigns and, once elected, leads until the term or ctx
// ends. The term is closed on return, which withdraws the candidacy and
// the controller record at once.
func (c *Controller) serveTerm(ctx context.Context) error {
	term, err := c.store.Campaign(ctx, c.id, c.opts.SessionTTL)
	if err != nil {
		return fmt.Errorf("controller: campaign: %w", err)
	}
	defer func() {
		if err := term.Close(); err != nil && !metadata.IsClosed(c.cache.Done()) {
			c.log.Warn("controller: withdraw candidacy", "err", err)
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, below
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wg.Go(func() { // the term's end ends the work
		select {
		case <-term.Done():
			cancel(term.Err())
		case <-tctx.Done():
		}
	})
	// Decide from a cache at least as new as the claim.
	if err := c.cache.WaitRevision(tctx, term.Revision()); err != nil {
		return fmt.Errorf("controller: catch up to revision %d: %w", term.Revision(), err)
	}
	c.setTerm(term)
	defer c.setTerm(nil)
	c.log.Info("elected controller", "epoch", term.Epoch())
	err = c.lead(tctx, term)
	c.log.Info("controller term over", "epoch", term.Epoch(), "reason", context.Cause(tctx), "err", err)
	switch {
	case errors.Is(err, metadata.ErrFenced) || ctx.Err() != nil:
		return nil
	case tctx.Err() != nil:
		return context.Cause(tctx)
	default:
		return err
	}
}

// setTerm publishes the current term (nil: not elected).
func (c *Controller) setTerm(t metadata.Term) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.term = t
	if t != nil {
		c.epoch = t.Epoch()
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// currentTerm returns the current term, or ErrNotController.
func (c *Controller) currentTerm() (metadata.Term, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.term == nil {
		return nil, fmt.Errorf("broker %d: %w", c.id, ErrNotController)
	}
	return c.term, nil
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

// retryFailed logs a failure the controller retries: at debug level when
// the store is unavailable (the store logs the outage itself, once),
// else as a warning.
func (c *Controller) retryFailed(msg string, err error, args ...any) {
	args = append(args, "err", err)
	if errors.Is(err, metadata.ErrUnavailable) {
		c.log.Debug(msg, args...)
		return
	}
	c.log.Warn(msg, args...)
}
