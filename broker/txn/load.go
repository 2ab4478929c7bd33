package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
)

// loadRetry is the wait before loading a partition again after a failed
// read.
const loadRetry = time.Second

// load replays a newly led partition and then publishes its ids,
// retrying after read failures until the shard is resigned.
func (c *Coordinator) load(sh *shard) {
	start := time.Now()
	for {
		st, n, err := readLog(sh.log, func(err error) {
			c.log.Warn("skip __transaction_state record", "partition", sh.index, "err", err)
		})
		if err == nil {
			c.publish(sh, st, n, time.Since(start))
			return
		}
		c.log.Error("load transaction coordinator partition", "partition", sh.index, "err", err)
		select {
		case <-sh.stop:
			return
		case <-time.After(loadRetry):
		}
	}
}

// readLog replays a partition: the last record of each transactional id
// wins, a tombstone removes it; records of unknown versions are skipped,
// as Kafka does, and malformed ones are skipped with a warning (skip).
// It returns the ids and how many records it read.
func readLog(l Log, skip func(error)) (map[string]*Metadata, int, error) {
	st := map[string]*Metadata{}
	n := 0
	err := coordlog.Replay(TopicName, l, func(key, value []byte) {
		n++
		id, md, err := DecodeRecord(key, value)
		switch {
		case errors.Is(err, ErrUnknownVersion):
		case err != nil:
			skip(err)
		case md == nil:
			delete(st, id)
		default:
			st[id] = md
		}
	})
	if err != nil {
		return nil, 0, fmt.Errorf("txn: %w", err)
	}
	return st, n, nil
}

// publish installs a loaded partition's ids, unless the shard was
// resigned meanwhile, and resumes the transactions that were ending: their
// markers are written again and they complete, as Kafka's coordinator
// does after a load.
func (c *Coordinator) publish(sh *shard, st map[string]*Metadata, records int, took time.Duration) {
	txns := make(map[string]*entry, len(st))
	var ending []*entry
	for id, md := range st {
		e := &entry{sh: sh, md: md}
		txns[id] = e
		if md.State == PrepareCommit || md.State == PrepareAbort {
			ending = append(ending, e)
		}
	}
	n := len(txns)
	c.mu.Lock()
	if c.closed || c.shards[sh.index] != sh {
		c.mu.Unlock()
		return
	}
	sh.txns = txns // shared from here on: read only under c.mu
	sh.loaded = true
	c.mu.Unlock()
	for _, e := range ending {
		e.mu.Lock()
		if !e.removed {
			c.sendMarkers(e)
		}
		e.mu.Unlock()
	}
	lvl := slog.LevelDebug
	if records > 0 {
		lvl = slog.LevelInfo
	}
	c.log.Log(context.Background(), lvl, "loaded transaction coordinator partition", "partition", sh.index, "epoch", sh.epoch,
		"records", records, "transactional_ids", n, "ending", len(ending), "took", took)
}
