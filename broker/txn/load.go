package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
)

// load replays a newly led partition and then publishes its ids
// (coordshard retries it after a failed read).
func (c *Coordinator) load(sh *shard, start time.Time) error {
	st, n, err := readLog(sh.Log, func(err error) {
		c.log.Warn("skip __transaction_state record", "partition", sh.Index, "err", err)
	})
	if err != nil {
		return err
	}
	c.publish(sh, st, n, start)
	return nil
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
func (c *Coordinator) publish(sh *shard, st map[string]*Metadata, records int, start time.Time) {
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
	if !c.Publish(sh, start, func() { sh.txns = txns }) { // shared from here on: read only under the table's lock
		return
	}
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
	c.log.Log(context.Background(), lvl, "loaded transaction coordinator partition", "partition", sh.Index, "epoch", sh.Epoch,
		"records", records, "transactional_ids", n, "ending", len(ending), "took", time.Since(start))
}
