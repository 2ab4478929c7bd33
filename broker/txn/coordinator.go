package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
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
// leads.
type Coordinator struct {
	cfg     Config
	log     *slog.Logger
	pids    ProducerIDs
	markers MarkerWriter

	mu            sync.RWMutex
	closed        bool
	numPartitions int32 // partitions of __transaction_state; 0 while it does not exist
	shards        map[int32]*shard
}

// shard is one led __transaction_state partition and its transactional
// ids.
type shard struct {
	index int32
	epoch int32 // the coordinator epoch: the partition's leader epoch
	log   Log
	stop  chan struct{} // closed when the shard is resigned
	part  coordlog.Partition

	// Guarded by Coordinator.mu.
	loaded bool
	txns   map[string]*entry
}

// entry is one transactional id of a shard. mu guards md and removed.
type entry struct {
	sh      *shard
	mu      sync.Mutex
	md      *Metadata
	removed bool // dropped from its shard (resigned or expired)
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
	return &Coordinator{cfg: cfg, log: log, pids: pids, markers: markers, shards: map[int32]*shard{}}
}

// SetPartitionCount records how many partitions __transaction_state has
// (0: it does not exist), which decides every transactional id's
// partition.
func (c *Coordinator) SetPartitionCount(n int32) {
	c.mu.Lock()
	c.numPartitions = n
	c.mu.Unlock()
}

// Elect makes this broker the coordinator of partition index at leader
// (and coordinator) epoch epoch: the partition is loaded in the
// background, and its ids answer ErrLoadInProgress until that is done.
// Electing the same epoch and log again does nothing; a new epoch or log
// reloads.
func (c *Coordinator) Elect(index, epoch int32, l Log) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	old := c.shards[index]
	if old != nil && old.epoch == epoch && old.log == l {
		c.mu.Unlock()
		return
	}
	sh := &shard{index: index, epoch: epoch, log: l, stop: make(chan struct{}), txns: map[string]*entry{}}
	sh.part = coordlog.Partition{Topic: TopicName, Index: index, Epoch: epoch, Log: l, Timeout: c.cfg.WriteTimeout, Stop: sh.stop}
	c.shards[index] = sh
	c.mu.Unlock()
	if old != nil {
		c.unload(old)
	}
	c.log.Debug("loading transaction coordinator partition", "partition", index, "epoch", epoch)
	go c.load(sh)
}

// Resign gives up partition index: its ids are dropped from memory, and
// writes in flight answer ErrNotCoordinator.
func (c *Coordinator) Resign(index int32) {
	c.mu.Lock()
	sh := c.shards[index]
	delete(c.shards, index)
	c.mu.Unlock()
	if sh != nil {
		c.log.Info("resigned transaction coordinator partition", "partition", index)
		c.unload(sh)
	}
}

// Led returns the partitions this broker coordinates and their epochs.
func (c *Coordinator) Led() map[int32]int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[int32]int32, len(c.shards))
	for i, sh := range c.shards {
		out[i] = sh.epoch
	}
	return out
}

// Loaded reports whether partition index is led here and fully loaded.
func (c *Coordinator) Loaded(index int32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sh := c.shards[index]
	return sh != nil && sh.loaded
}

// Close resigns every partition and refuses further requests with
// ErrCoordinatorNotAvailable. Call it before the partitions' logs close.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	c.closed = true
	shards := c.shards
	c.shards = map[int32]*shard{}
	c.mu.Unlock()
	for _, sh := range shards {
		c.unload(sh)
	}
	return nil
}

// unload drops a detached shard's ids: a request holding one finds it
// removed once it gets its lock.
func (c *Coordinator) unload(sh *shard) {
	close(sh.stop)
	c.mu.Lock()
	txns := sh.txns
	sh.txns = map[string]*entry{}
	c.mu.Unlock()
	for _, e := range txns {
		e.mu.Lock()
		e.removed = true
		e.mu.Unlock()
	}
}

// find locates the shard of id and its entry. c.mu must be held.
func (c *Coordinator) find(id string) (*entry, *shard, error) {
	if c.closed {
		return nil, nil, ErrCoordinatorNotAvailable
	}
	if c.numPartitions <= 0 {
		return nil, nil, ErrNotCoordinator
	}
	sh := c.shards[PartitionFor(id, c.numPartitions)]
	switch {
	case sh == nil:
		return nil, nil, fmt.Errorf("%w: %s", ErrNotCoordinator, id)
	case !sh.loaded:
		return nil, nil, fmt.Errorf("%w: %s", ErrLoadInProgress, id)
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
		c.mu.RLock()
		e, _, err := c.find(id)
		c.mu.RUnlock()
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
func (c *Coordinator) insert(id string, md *Metadata) (*entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, sh, err := c.find(id)
	if err != nil || e != nil {
		return e, err
	}
	e = &entry{sh: sh, md: md}
	sh.txns[id] = e
	return e, nil
}

// current checks, after a write, that sh is still this broker's shard of
// its partition at its epoch, as Kafka checks the coordinator epoch
// before applying a written transition.
func (c *Coordinator) current(sh *shard) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cur := c.shards[sh.index]
	switch {
	case c.closed || cur == nil:
		return fmt.Errorf("%w: %s-%d resigned", ErrNotCoordinator, TopicName, sh.index)
	case cur != sh && !cur.loaded:
		return fmt.Errorf("%w: %s-%d reloading at epoch %d", ErrLoadInProgress, TopicName, sh.index, cur.epoch)
	case cur != sh:
		return fmt.Errorf("%w: %s-%d coordinator epoch %d, written at %d", ErrNotCoordinator, TopicName, sh.index, cur.epoch, sh.epoch)
	}
	return nil
}

// forget removes an expired entry from its shard. e.mu is held (lock
// order: entry → Coordinator.mu).
func (c *Coordinator) forget(e *entry) {
	c.mu.Lock()
	if e.sh.txns[e.md.TransactionalID] == e {
		delete(e.sh.txns, e.md.TransactionalID)
	}
	c.mu.Unlock()
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
		if err = e.md.CompleteTransition(tx); err == nil {
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
	err := e.sh.part.Append([]record.Record{rec}, now)
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
func (c *Coordinator) Current(m Markers) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed || c.numPartitions <= 0 {
		return false
	}
	sh := c.shards[PartitionFor(m.TransactionalID, c.numPartitions)]
	return sh != nil && sh.epoch == m.CoordinatorEpoch
}
