// Package coordshard is the shard table the group and the transaction
// coordinators (broker/group, broker/txn) share: the partitions of their
// internal topic (__consumer_offsets, __transaction_state) this broker
// leads, each loaded in the background when it is elected and dropped
// when it is resigned, and the partition count that maps a key to its
// partition. What a shard holds (groups, transactional ids) is the
// coordinator's.
//
// # Concurrency
//
// One RWMutex, the table's, guards the shard map, each shard's loaded
// flag, the partition count and the closed flag, and also whatever the
// coordinator keeps in its shards: the coordinator reads its shards'
// contents only inside View and changes them only inside Update (or in
// Load's publish callback), which hold that lock. The table calls no
// coordinator code with its lock held except those callbacks, so the
// coordinator's own locks (a group's, a transactional id's) may be held
// around View and Update: lock order coordinator item → table. Elect
// starts one loader goroutine per shard; Resign and Close run the
// coordinator's Unload after the shard's Stop channel is closed, outside
// the lock.
package coordshard

import (
	"log/slog"
	"sync"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
)

// loadRetry is the wait before loading a partition again after a failed
// read.
const loadRetry = time.Second

// Shard is one led partition, the part every coordinator's shard type
// embeds. Its fields are set by Elect and never change.
type Shard struct {
	Index int32              // the partition
	Epoch int32              // its leader epoch, the coordinator epoch
	Log   coordlog.Log       // the partition's log
	Part  coordlog.Partition // appends at Epoch until the shard is resigned

	stop   chan struct{}
	loaded bool // guarded by the table's lock
}

// Stop is closed when the shard is resigned.
func (s *Shard) Stop() <-chan struct{} { return s.stop }

func (s *Shard) base() *Shard { return s }

// Member is a coordinator's shard type: a pointer to a struct that embeds
// Shard.
type Member interface {
	comparable
	base() *Shard
}

// Errors are the coordinator's answers for a key the table cannot serve.
type Errors struct {
	NotAvailable   error // the table is closed
	NotCoordinator error // the key's partition is not led here
	LoadInProgress error // the key's partition is still loading
}

// Config is what a coordinator gives its table.
type Config[S Member] struct {
	Topic   string        // the internal topic
	Name    string        // the coordinator's name in logs: "group", "transaction"
	Timeout time.Duration // Shard.Part's wait for replication
	Errors  Errors
	Log     *slog.Logger
	// New returns an empty shard; Elect fills its Shard.
	New func() S
	// Load reads a newly elected shard's partition and installs its
	// contents with Table.Publish; an error is logged and Load retried
	// until the shard is resigned.
	Load func(sh S, start time.Time) error
	// Unload drops a resigned shard's contents; its Stop is closed and it
	// is no longer in the table.
	Unload func(sh S)
}

// Table is a coordinator's led partitions. The zero value is not usable;
// see New.
type Table[S Member] struct {
	cfg Config[S]

	mu     sync.RWMutex
	closed bool
	n      int32 // partitions of the topic; 0 while it does not exist
	shards map[int32]S

	loads loadStats // guarded by mu
}

// New returns a table that leads no partition yet.
func New[S Member](cfg Config[S]) *Table[S] {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Table[S]{cfg: cfg, shards: map[int32]S{}}
}

// SetPartitionCount records how many partitions the topic has (0: it
// does not exist), which decides every key's partition.
func (t *Table[S]) SetPartitionCount(n int32) {
	t.mu.Lock()
	t.n = n
	t.mu.Unlock()
}

// Elect makes this broker the coordinator of partition index at leader
// (and coordinator) epoch epoch: the partition is loaded in the
// background, and its keys answer LoadInProgress until that is done.
// Electing the same epoch and log again does nothing; a new epoch or log
// reloads.
func (t *Table[S]) Elect(index, epoch int32, l coordlog.Log) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	old, had := t.shards[index]
	if had && old.base().Epoch == epoch && old.base().Log == l {
		t.mu.Unlock()
		return
	}
	sh := t.cfg.New()
	b := sh.base()
	b.Index, b.Epoch, b.Log, b.stop = index, epoch, l, make(chan struct{})
	b.Part = coordlog.Partition{Topic: t.cfg.Topic, Index: index, Epoch: epoch, Log: l, Timeout: t.cfg.Timeout, Stop: b.stop}
	t.shards[index] = sh
	t.mu.Unlock()
	if had {
		t.unload(old)
	}
	t.cfg.Log.Debug("loading "+t.cfg.Name+" coordinator partition", "partition", index, "epoch", epoch)
	go t.load(sh)
}

// load runs the coordinator's Load until it succeeds or the shard is
// resigned.
func (t *Table[S]) load(sh S) {
	start := time.Now()
	for {
		err := t.cfg.Load(sh, start)
		if err == nil {
			return
		}
		t.cfg.Log.Error("load "+t.cfg.Name+" coordinator partition", "partition", sh.base().Index, "err", err)
		select {
		case <-sh.base().stop:
			return
		case <-time.After(loadRetry):
		}
	}
}

// Publish installs a loaded shard: unless it was resigned meanwhile,
// install runs with the table's lock held and the shard's keys are served
// from then on. It reports whether the shard was published; start is
// when its load began (the load time is recorded).
func (t *Table[S]) Publish(sh S, start time.Time, install func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.shards[sh.base().Index]; t.closed || !ok || cur != sh {
		return false
	}
	install()
	sh.base().loaded = true
	t.loads.add(time.Since(start))
	return true
}

// Resign gives up partition index: the coordinator's Unload drops its
// contents, and appends in flight end.
func (t *Table[S]) Resign(index int32) {
	t.mu.Lock()
	sh, ok := t.shards[index]
	delete(t.shards, index)
	t.mu.Unlock()
	if ok {
		t.cfg.Log.Info("resigned "+t.cfg.Name+" coordinator partition", "partition", index)
		t.unload(sh)
	}
}

// Led returns the partitions this broker coordinates and their epochs.
func (t *Table[S]) Led() map[int32]int32 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[int32]int32, len(t.shards))
	for i, sh := range t.shards {
		out[i] = sh.base().Epoch
	}
	return out
}

// Loaded reports whether partition index is led here and fully loaded.
func (t *Table[S]) Loaded(index int32) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	sh, ok := t.shards[index]
	return ok && sh.base().loaded
}

// Close resigns every partition; keys then answer NotAvailable. Call it
// before the partitions' logs close.
func (t *Table[S]) Close() error {
	t.mu.Lock()
	t.closed = true
	shards := t.shards
	t.shards = map[int32]S{}
	t.mu.Unlock()
	for _, sh := range shards {
		t.unload(sh)
	}
	return nil
}

// unload stops a detached shard and hands it to the coordinator's Unload.
func (t *Table[S]) unload(sh S) {
	close(sh.base().stop)
	t.cfg.Unload(sh)
}

// View runs fn with the table's lock held for reading.
func (t *Table[S]) View(fn func(Locked[S])) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	fn(Locked[S]{t})
}

// Update runs fn with the table's lock held for writing.
func (t *Table[S]) Update(fn func(Locked[S])) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fn(Locked[S]{t})
}

// Locked is the table seen with its lock held, inside View or Update.
type Locked[S Member] struct{ t *Table[S] }

// Closed reports whether the table was closed.
func (l Locked[S]) Closed() bool { return l.t.closed }

// Partitions is the topic's partition count (0: no topic).
func (l Locked[S]) Partitions() int32 { return l.t.n }

// Shard returns the shard of partition index, loaded or not.
func (l Locked[S]) Shard(index int32) (S, bool) {
	sh, ok := l.t.shards[index]
	return sh, ok
}

// Find returns the loaded shard of partition(n), n being the partition
// count, or the Errors for a closed table, a partition not led here or
// one still loading.
func (l Locked[S]) Find(partition func(n int32) int32) (S, error) {
	var none S
	switch {
	case l.t.closed:
		return none, l.t.cfg.Errors.NotAvailable
	case l.t.n <= 0:
		return none, l.t.cfg.Errors.NotCoordinator
	}
	sh, ok := l.t.shards[partition(l.t.n)]
	switch {
	case !ok:
		return none, l.t.cfg.Errors.NotCoordinator
	case !sh.base().loaded:
		return none, l.t.cfg.Errors.LoadInProgress
	}
	return sh, nil
}

// Loaded returns the loaded shards, and whether some led shard is still
// loading.
func (l Locked[S]) Loaded() (out []S, loading bool) {
	for _, sh := range l.t.shards {
		if sh.base().loaded {
			out = append(out, sh)
		} else {
			loading = true
		}
	}
	return out, loading
}

// IsLoaded reports whether sh finished loading.
func (l Locked[S]) IsLoaded(sh S) bool { return sh.base().loaded }

// Collect returns the items of every loaded shard of t (items(sh) is a
// shard's map, read with the table's lock held), and whether some led
// shard is still loading.
func Collect[S Member, V any](t *Table[S], items func(S) map[string]V) (out []V, loading bool) {
	t.View(func(l Locked[S]) {
		var shards []S
		shards, loading = l.Loaded()
		for _, sh := range shards {
			for _, v := range items(sh) {
				out = append(out, v)
			}
		}
	})
	return out, loading
}
