package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
	"github.com/strata-broker/strata/broker/coordshard"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/record"
)

// Config is the coordinator's share of the broker configuration. Take it
// from ConfigFrom; New uses the values as given.
type Config struct {
	MaxTimeout      time.Duration // transaction.max.timeout.ms
	AbortInterval   time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms
	IDExpiration    time.Duration // transactional.id.expiration.ms
	ExpiryInterval  time.Duration // how often ids are expired (Kafka's transaction.remove.expired.transaction.cleanup.interval.ms default)
	WriteTimeout    time.Duration // wait for a __transaction_state write to be replicated (Kafka's request.timeout.ms default)
	ClientVersion   Version       // the finalized transaction.version: the version of the coordinator's own aborts of a new id
	MarkerRetryWait time.Duration // wait before writing a Complete* state again after its write failed
}

// Kafka's defaults for the settings Strata has no key for.
const (
	defaultExpiryInterval = time.Hour
	defaultWriteTimeout   = 30 * time.Second
	defaultRetryWait      = time.Second
)

// ConfigFrom takes the transaction settings of a broker configuration.
func ConfigFrom(b *config.Broker) Config {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return Config{
		MaxTimeout:      ms(b.TransactionMaxTimeoutMs),
		AbortInterval:   ms(b.TransactionAbortTimedOutTransactionCleanupIntervalMs),
		IDExpiration:    ms(b.TransactionalIDExpirationMs),
		ExpiryInterval:  defaultExpiryInterval,
		WriteTimeout:    defaultWriteTimeout,
		ClientVersion:   TV2,
		MarkerRetryWait: defaultRetryWait,
	}
}

// Log is what the coordinator needs of a __transaction_state partition
// it leads; *partition.Partition implements it.
type Log = coordlog.Log

// ProducerIDs hands out new producer ids (*producerid.Allocator).
type ProducerIDs interface {
	Next(ctx context.Context) (int64, error)
}

// Coordinator is the transaction coordinator of one broker: it owns the
// transactional ids of the __transaction_state partitions this broker
// leads. Its shard table (Elect, Resign, Led, Loaded, Close,
// SetPartitionCount) is coordshard's.
type Coordinator struct {
	*coordshard.Table[*shard]

	cfg     Config
	log     *slog.Logger
	pids    ProducerIDs
	markers MarkerWriter
	counts  stats
}

// shard is one led __transaction_state partition and its transactional
// ids.
type shard struct {
	coordshard.Shard

	txns map[string]*entry // guarded by the table's lock
}

// entry is one transactional id of a shard. mu guards md and removed.
type entry struct {
	sh      *shard
	mu      sync.Mutex
	md      *Metadata
	removed bool // dropped from its shard (resigned or expired)
	// ended is open while the transaction is in PrepareCommit or
	// PrepareAbort (set by this coordinator, not by a load) and closed
	// when it leaves (AwaitEnded).
	ended chan struct{}
}

// New returns a coordinator that leads no partition yet; see Elect, or
// Run to follow the metadata. pids allocates the producer ids of new and
// exhausted transactional ids; markers writes the transaction markers
// (nil: none are written, and an ending transaction completes at once).
func New(cfg Config, pids ProducerIDs, markers MarkerWriter, log *slog.Logger) *Coordinator {
	if log == nil {
		log = slog.Default()
	}
	if markers == nil {
		markers = noMarkers{}
	}
	c := &Coordinator{cfg: cfg, log: log, pids: pids, markers: markers}
	c.Table = coordshard.New(coordshard.Config[*shard]{
		Topic: TopicName, Name: "transaction", Timeout: cfg.WriteTimeout, Log: log,
		Errors: coordshard.Errors{NotAvailable: ErrCoordinatorNotAvailable, NotCoordinator: ErrNotCoordinator, LoadInProgress: ErrLoadInProgress},
		New:    func() *shard { return &shard{txns: map[string]*entry{}} },
		Load:   c.load,
		Unload: c.unload,
	})
	return c
}

// unload drops a resigned shard's ids: a request holding one finds it
// removed once it gets its lock.
func (c *Coordinator) unload(sh *shard) {
	var txns map[string]*entry
	c.Update(func(coordshard.Locked[*shard]) {
		txns = sh.txns
		sh.txns = map[string]*entry{}
	})
	for _, e := range txns {
		e.mu.Lock()
		e.removed = true
		e.mu.Unlock()
	}
}

// find locates the shard of id and its entry. The table's lock is held.
func find(l coordshard.Locked[*shard], id string) (*entry, *shard, error) {
	sh, err := l.Find(func(n int32) int32 { return PartitionFor(id, n) })
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s", err, id)
	}
	return sh.txns[id], sh, nil
}

// withTxn runs fn on id's metadata with its lock held. A missing id is
// created with create when it is not nil, else ErrTransactionalIDNotFound
// is returned (wrapped with the answer the request gives, missing). An
// entry removed between lookup and lock is looked up again.
func (c *Coordinator) withTxn(id string, create func() (*Metadata, error), missing error, fn func(*entry) error) error {
	if id == "" {
		return fmt.Errorf("%w: empty transactional id", ErrInvalidRequest)
	}
	for range 3 {
		var e *entry
		var err error
		c.View(func(l coordshard.Locked[*shard]) { e, _, err = find(l, id) })
		if err != nil {
			return err
		}
		if e == nil {
			if create == nil {
				return fmt.Errorf("%w: %s", missing, id)
			}
			md, err := create()
			if err != nil {
				return err
			}
			if e, err = c.insert(id, md); err != nil {
				return err
			}
		}
		e.mu.Lock()
		if e.removed {
			e.mu.Unlock()
			continue
		}
		err = fn(e)
		e.mu.Unlock()
		return err
	}
	return ErrCoordinatorNotAvailable
}

// insert adds md unless id appeared meanwhile, and returns id's entry.
func (c *Coordinator) insert(id string, md *Metadata) (e *entry, err error) {
	c.Update(func(l coordshard.Locked[*shard]) {
		var sh *shard
		if e, sh, err = find(l, id); err == nil && e == nil {
			e = &entry{sh: sh, md: md}
			sh.txns[id] = e
		}
	})
	return e, err
}

// current checks, after a write, that sh is still this broker's shard of
// its partition at its epoch, as Kafka checks the coordinator epoch
// before applying a written transition.
func (c *Coordinator) current(sh *shard) (err error) {
	c.View(func(l coordshard.Locked[*shard]) {
		cur, ok := l.Shard(sh.Index)
		switch {
		case l.Closed() || !ok:
			err = fmt.Errorf("%w: %s-%d resigned", ErrNotCoordinator, TopicName, sh.Index)
		case cur != sh && !l.IsLoaded(cur):
			err = fmt.Errorf("%w: %s-%d reloading at epoch %d", ErrLoadInProgress, TopicName, sh.Index, cur.Epoch)
		case cur != sh:
			err = fmt.Errorf("%w: %s-%d coordinator epoch %d, written at %d", ErrNotCoordinator, TopicName, sh.Index, cur.Epoch, sh.Epoch)
		}
	})
	return err
}

// forget removes an expired entry from its shard. e.mu is held (lock
// order: entry → table).
func (c *Coordinator) forget(e *entry) {
	c.Update(func(coordshard.Locked[*shard]) {
		if e.sh.txns[e.md.TransactionalID] == e {
			delete(e.sh.txns, e.md.TransactionalID)
		}
	})
	e.removed = true
}

// write logs tx, the transition prepared on e's metadata, and applies it
// once it is replicated; on failure the transition is dropped (fence:
// the write was of an abort carrying an epoch fence, see FenceFailed). A
// partition no longer led here at the shard's epoch is ErrNotCoordinator,
// a shard being reloaded ErrLoadInProgress, a write that failed or was
// not replicated in time ErrCoordinatorNotAvailable. e.mu is held.
func (c *Coordinator) write(e *entry, tx Txn, fence bool, now time.Time) error {
	err := c.append(e, tx, now)
	if err == nil {
		err = c.current(e.sh)
	}
	if err == nil {
		from := e.md.State
		if err = e.md.CompleteTransition(tx); err == nil {
			c.applied(e, from, tx.State)
			return nil
		}
	}
	if fence {
		e.md.FenceFailed()
	} else {
		e.md.CancelTransition()
	}
	return err
}

// append writes e's record of tx (a tombstone when tx is Dead).
func (c *Coordinator) append(e *entry, tx Txn, now time.Time) error {
	id := e.md.TransactionalID
	rec := record.Record{Key: EncodeKey(id)}
	if tx.State != Dead {
		v, err := EncodeValue(tx)
		if err != nil {
			return err
		}
		rec.Value = v
	}
	err := e.sh.Part.Append([]record.Record{rec}, now)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, coordlog.ErrNotLeader):
		return fmt.Errorf("txn: write %s of %s: %w: %w", tx.State, id, ErrNotCoordinator, err)
	}
	return fmt.Errorf("txn: write %s of %s: %w: %w", tx.State, id, ErrCoordinatorNotAvailable, err)
}

// Current reports whether m's coordinator epoch is still the epoch at
// which this broker coordinates its transactional id: the marker writer
// drops the work of a coordinator that resigned or reloaded the partition
// (its successor writes the markers again after loading), as Kafka's
// channel manager checks the coordinator epoch before each send.
func (c *Coordinator) Current(m Markers) (ok bool) {
	c.View(func(l coordshard.Locked[*shard]) {
		if l.Closed() || l.Partitions() <= 0 {
			return
		}
		sh, led := l.Shard(PartitionFor(m.TransactionalID, l.Partitions()))
		ok = led && sh.Epoch == m.CoordinatorEpoch
	})
	return ok
}
