package local

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-broker/strata/tier/segment"
)

// epochFile is the leader-epoch checkpoint, in Kafka's text layout:
// a version line (0), a count line, then one "epoch startOffset" line per
// entry in ascending order.
const epochFile = "leader-epoch-checkpoint"

// EpochEntry says that leader epoch Epoch wrote its first batch at
// StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the log's leader-epoch history, used to answer
// OffsetForLeaderEpoch and so to find where a follower's log diverges from
// the leader's. Guarded by Log.mu.
type epochCache struct {
	path    string
	entries []EpochEntry
	dirty   bool // the file holds the entries but is not fsynced yet
}

// assign records that epoch starts at offset, if it is newer than the
// latest known epoch. It is on the append path, so the file is written
// without fsync (as Kafka does since KAFKA-15046): sync makes it durable
// before the recovery point passes offset, and recovery re-derives the
// entries past the recovery point from the batches. Caller holds Log.mu.
func (c *epochCache) assign(epoch int32, offset int64) error {
	if !c.add(epoch, offset) {
		return nil
	}
	c.dirty = true
	return c.write(false)
}

// add appends the entry if epoch is newer than the latest known one. An
// entry starting at or after offset goes first (an epoch that wrote
// nothing before the next one started), as in Kafka's
// LeaderEpochFileCache.assign, so that every entry's epoch ends where the
// next starts.
func (c *epochCache) add(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	n := len(c.entries)
	if n > 0 && c.entries[n-1].Epoch >= epoch {
		return false
	}
	for n > 0 && c.entries[n-1].StartOffset >= offset {
		n--
	}
	c.entries = append(c.entries[:n], EpochEntry{epoch, offset})
	return true
}

// sync makes an assign's write durable; call before the recovery point
// is checkpointed. Caller holds Log.mu.
func (c *epochCache) sync() error {
	if c == nil || !c.dirty {
		return nil
	}
	return c.persist()
}

// truncateFromEnd drops the entries that start at or after leo (the log
// was truncated to leo).
func (c *epochCache) truncateFromEnd(leo int64) error {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= leo {
		n--
	}
	if n == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:n]
	return c.persist()
}

// truncateFromStart forgets history below start: the entry covering start
// is moved up to it (the log start moved).
func (c *epochCache) truncateFromStart(start int64) error {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= start {
		i++
	}
	if len(c.entries) == 0 || (i == 0 && c.entries[0].StartOffset >= start) {
		return nil
	}
	c.entries = slices.Clone(c.entries[i:])
	c.entries[0].StartOffset = max(c.entries[0].StartOffset, start)
	return c.persist()
}

// clear forgets everything (the log was emptied).
func (c *epochCache) clear() error {
	c.entries = nil
	return c.persist()
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's LeaderEpochFileCache
// does: for the latest epoch the log end; else the start of the first
// newer epoch, with the largest known epoch not above the one asked for.
// (-1, -1) when nothing is known.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	n := len(c.entries)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if c.entries[n-1].Epoch == epoch {
		return epoch, leo
	}
	hi := slices.IndexFunc(c.entries, func(e EpochEntry) bool { return e.Epoch > epoch })
	if hi < 0 {
		return -1, -1
	}
	if hi == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

// epochFor is the epoch that wrote offset, as Kafka's
// LeaderEpochFileCache.epochForOffset: the latest entry starting at or
// before it; false when none does.
func (c *epochCache) epochFor(offset int64) (int32, bool) {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > offset })
	if i == 0 {
		return -1, false
	}
	return c.entries[i-1].Epoch, true
}

// persist replaces the file durably (truncations, recovery, sync).
func (c *epochCache) persist() error {
	if err := c.write(true); err != nil {
		return err
	}
	c.dirty = false
	return nil
}

// write replaces the file with the entries through a renamed temporary
// file; durable only with synced.
func (c *epochCache) write(synced bool) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	var err error
	if synced {
		err = segment.WriteFileAtomic(c.path, b.Bytes())
	} else if err = os.WriteFile(c.path+".tmp", b.Bytes(), 0o644); err == nil {
		err = os.Rename(c.path+".tmp", c.path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", c.path, err)
	}
	return nil
}

// loadEpochs reads the checkpoint (rebuilding it from the batch headers
// when it is missing or unreadable), adds the epochs of the batches from
// scanFrom on (the recovery point after a crash: assign does not fsync)
// and drops entries past the log end. Caller holds mu or owns the
// unpublished log.
func (l *Log) loadEpochs(scanFrom int64) error {
	l.epochs = &epochCache{path: filepath.Join(l.dir, epochFile)}
	entries, err := readEpochs(l.epochs.path)
	if err != nil {
		if l.leo.Load() > l.segs[0].BaseOffset() {
			l.logger.Info("rebuilding leader-epoch checkpoint", "reason", err)
		}
		entries = nil
		for _, s := range l.segs {
			for h, err := range s.Batches(s.BaseOffset()) {
				if err != nil {
					return fmt.Errorf("rebuild leader epochs: %w", err)
				}
				if n := len(entries); h.LeaderEpoch >= 0 && (n == 0 || entries[n-1].Epoch < h.LeaderEpoch) {
					entries = append(entries, EpochEntry{h.LeaderEpoch, h.BaseOffset})
				}
			}
		}
		l.epochs.entries = entries
		if err := l.epochs.persist(); err != nil {
			return err
		}
	}
	l.epochs.entries = entries
	if err := l.epochs.truncateFromEnd(l.leo.Load()); err != nil {
		return err
	}
	added := false
	for _, s := range l.segs {
		if s.NextOffset() <= scanFrom {
			continue
		}
		for h, err := range s.Batches(max(scanFrom, s.BaseOffset())) {
			if err != nil {
				return fmt.Errorf("recover leader epochs: %w", err)
			}
			added = l.epochs.add(h.LeaderEpoch, h.BaseOffset) || added
		}
	}
	if added {
		return l.epochs.persist()
	}
	return nil
}

func readEpochs(path string) ([]EpochEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines []string
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("%s: bad header", path)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%s: bad entry count", path)
	}
	out := make([]EpochEntry, 0, n)
	for _, line := range lines[2:] {
		es, ofs, ok := strings.Cut(line, " ")
		e, err1 := strconv.ParseInt(es, 10, 32)
		o, err2 := strconv.ParseInt(ofs, 10, 64)
		if !ok || err1 != nil || err2 != nil || (len(out) > 0 && (out[len(out)-1].Epoch >= int32(e) || out[len(out)-1].StartOffset > o)) {
			return nil, fmt.Errorf("%s: bad entry %q", path, line)
		}
		out = append(out, EpochEntry{int32(e), o})
	}
	return out, nil
}

// LatestEpoch is the newest leader epoch in the log (-1 for none).
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.epochs.entries); n > 0 {
		return l.epochs.entries[n-1].Epoch
	}
	return -1
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the end offset of the
// largest epoch not above epoch, and that epoch; (-1, -1) when unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.leo.Load())
}

// EpochForOffset is the leader epoch whose leader wrote offset, from the
// leader-epoch history (ListOffsets answers it with the log start); false
// when the history has no entry at or before offset.
func (l *Log) EpochForOffset(offset int64) (int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.epochFor(offset)
}

// AssignEpoch records that epoch starts at the log end, if it is newer
// than the latest known epoch: a replica that becomes leader calls it, as
// Kafka's makeLeader does, so the first append of the epoch writes no
// checkpoint.
func (l *Log) AssignEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	return l.epochs.assign(epoch, l.leo.Load())
}

// Epochs returns a copy of the leader-epoch history.
func (l *Log) Epochs() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.epochs.entries)
}
