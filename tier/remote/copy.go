package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/objstore"
	"github.com/strata-broker/strata/tier/segment"
)

// copySegments copies, in offset order, every sealed local segment past
// what is already copied whose last offset is below the last stable
// offset (copyBound), as Kafka's RemoteLogManager does: a copied segment
// holds no record of an open transaction, so its transaction index is
// final.
func (m *Manager) copySegments(ctx context.Context, pi PartitionInfo) error {
	if err := m.claim(ctx, pi); err != nil {
		return err
	}
	segs, _ := m.segments(pi.TopicID, pi.Partition)
	done := copiedEnd(segs)
	for _, ls := range pi.Log.Segments() {
		last := ls.NextOffset - 1
		if !ls.Sealed || ls.NextOffset <= ls.BaseOffset || last <= done {
			continue
		}
		if ls.NextOffset > copyBound(pi) {
			break // never unstable data; later segments are newer still
		}
		if err := m.copyOne(ctx, pi, ls); err != nil {
			return err
		}
		done = last
	}
	return nil
}

// copyOne copies one local segment: COPY_STARTED, the objects,
// COPY_FINISHED, then the manifest.
func (m *Manager) copyOne(ctx context.Context, pi PartitionInfo, ls local.SegmentInfo) error {
	s := Segment{
		Topic: pi.Topic, Partition: pi.Partition, TopicID: hex.EncodeToString(pi.TopicID[:]),
		CopyID: newCopyID(), BaseOffset: ls.BaseOffset, EndOffset: ls.NextOffset - 1,
		MaxTimestamp: ls.MaxTimestamp, Size: ls.Size, LeaderEpoch: pi.LeaderEpoch,
		Epochs: epochsFor(pi.Log.Epochs(), ls.BaseOffset, ls.NextOffset-1), State: CopyStarted,
	}
	if err := m.putRecord(ctx, pi.TopicID, &s, pi.LeaderEpoch); err != nil {
		return err
	}
	var err error
	stem := dir(pi.Topic, pi.TopicID, pi.Partition) + s.Name()
	files := []string{ls.LogPath, ls.IndexPath, ls.TimeIndexPath}
	for i, path := range files {
		if err := putFile(ctx, m.store, stem+objectSuffixes[i], path, ls.Size, i == 0); err != nil {
			return fmt.Errorf("remote: copy %s: %w", s.Name(), err)
		}
	}
	if s.TxnIndex, err = putTxnIndex(ctx, m.store, stem+txnIndexSuffix, ls.TxnIndexPath); err != nil {
		return fmt.Errorf("remote: copy %s: %w", s.Name(), err)
	}
	ep := encodeEpochs(s.Epochs)
	if err := m.store.Put(ctx, stem+".epochs", bytes.NewReader(ep), int64(len(ep))); err != nil {
		return fmt.Errorf("remote: copy %s epochs: %w", s.Name(), err)
	}
	snap := segment.FileName(pi.Log.Dir(), ls.NextOffset, ".snapshot")
	if _, err := os.Stat(snap); err == nil {
		if err := objstore.PutFile(ctx, m.store, stem+".producers", snap); err != nil {
			return fmt.Errorf("remote: copy %s producers: %w", s.Name(), err)
		}
	} else if err := m.store.Put(ctx, stem+".producers", bytes.NewReader(nil), 0); err != nil {
		return fmt.Errorf("remote: copy %s producers: %w", s.Name(), err)
	}
	s.State, s.Copied = CopyFinished, true
	if err := m.putRecord(ctx, pi.TopicID, &s, pi.LeaderEpoch); err != nil {
		return err
	}
	m.log.Debug("remote: segment copied", "topic", pi.Topic, "partition", pi.Partition, "base", s.BaseOffset, "end", s.EndOffset, "copy", s.CopyID)
	segs, err := m.refresh(ctx, pi.TopicID, pi.Partition, pi.Topic)
	if err != nil {
		return err
	}
	return m.writeManifest(ctx, pi, segs)
}

// copyBound is where copying stops: the partition's last stable offset
// for its high watermark (the high watermark without transactions).
func copyBound(pi PartitionInfo) int64 {
	if pi.Log == nil {
		return pi.HighWatermark
	}
	return pi.Log.LastStableOffset(pi.HighWatermark)
}

// putTxnIndex uploads the segment's transaction index at path to key when
// it holds an entry, and reports whether it did; a segment without an
// aborted transaction has no file (or an empty one) and gets no object.
func putTxnIndex(ctx context.Context, store objstore.ObjectStore, key, path string) (bool, error) {
	st, err := os.Stat(path)
	switch {
	case os.IsNotExist(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("stat %s: %w", path, err)
	case st.Size() == 0:
		return false, nil
	}
	return true, putFile(ctx, store, key, path, 0, false)
}

// putFile uploads path; the .log object takes exactly size bytes (the
// sealed segment's length), the indexes their whole file.
func putFile(ctx context.Context, store objstore.ObjectStore, key, path string, size int64, exact bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	if !exact {
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		size = st.Size()
	}
	if err := store.Put(ctx, key, io.NewSectionReader(f, 0, size), size); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

func newCopyID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b[:])
}

// epochsFor keeps the epoch entries that cover [base, end]: the last one
// starting at or before base and every one starting inside.
func epochsFor(all []local.EpochEntry, base, end int64) []local.EpochEntry {
	var out []local.EpochEntry
	for _, e := range all {
		switch {
		case e.StartOffset <= base:
			out = append(out[:0], e)
		case e.StartOffset <= end:
			out = append(out, e)
		}
	}
	return out
}

func encodeEpochs(es []local.EpochEntry) []byte {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return []byte(b.String())
}

// manifest is the per-partition object listing the finished copies, enough
// to rebuild the metadata from the bucket alone (see restore.go).
type manifest struct {
	Topic     string    `json:"topic"`
	TopicID   string    `json:"topic_id"`
	Partition int32     `json:"partition"`
	Segments  []Segment `json:"segments"`
	// Partitions and Configs describe the topic when the manifest was
	// written: its partition count and config overrides. They are absent
	// when the metadata store keeps no topic cache (topicCache).
	Partitions int32             `json:"partitions,omitempty"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// topicCache is implemented by metadata stores that cache the topics
// (etcdstore and memstore); the manifest then carries the topic's
// description.
type topicCache interface{ Cache() *metadata.Cache }

func (m *Manager) writeManifest(ctx context.Context, pi PartitionInfo, segs []Segment) error {
	mf := manifest{Topic: pi.Topic, TopicID: hex.EncodeToString(pi.TopicID[:]), Partition: pi.Partition, Segments: finished(segs)}
	if tc, ok := m.meta.(topicCache); ok {
		if t, ok := tc.Cache().Topic(pi.Topic); ok && t.ID == pi.TopicID {
			mf.Partitions, mf.Configs = int32(len(t.Partitions)), t.Configs
		}
	}
	b, err := json.Marshal(mf)
	if err != nil {
		return fmt.Errorf("remote: encode manifest: %w", err)
	}
	key := dir(pi.Topic, pi.TopicID, pi.Partition) + "manifest.json"
	if err := m.store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("remote: write manifest: %w", err)
	}
	return nil
}

// deleteObjects removes the objects of one copy; missing ones are fine.
func (m *Manager) deleteObjects(ctx context.Context, pi PartitionInfo, s Segment) error {
	stem := dir(pi.Topic, pi.TopicID, pi.Partition) + s.Name()
	var errs []error
	for _, suf := range append(objectSuffixes[:len(objectSuffixes):len(objectSuffixes)], txnIndexSuffix) {
		if err := m.store.Delete(ctx, stem+suf); err != nil && !errors.Is(err, objstore.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remote: delete objects of %s: %w", s.Name(), err)
	}
	return nil
}

// removeCopy runs DELETE_STARTED → objects deleted → DELETE_FINISHED for
// one record.
func (m *Manager) removeCopy(ctx context.Context, pi PartitionInfo, s Segment) error {
	s.State = DeleteStarted
	if err := m.putRecord(ctx, pi.TopicID, &s, pi.LeaderEpoch); err != nil {
		return err
	}
	if err := m.deleteObjects(ctx, pi, s); err != nil {
		return err
	}
	s.State = DeleteFinished
	return m.putRecord(ctx, pi.TopicID, &s, pi.LeaderEpoch)
}

// cleanOrphans finishes interrupted work: copies left in COPY_STARTED and
// deletions left in DELETE_STARTED are deleted, objects no record names
// (older than the grace period) are deleted, and DELETE_FINISHED records
// other than the highest are pruned. Only the leader runs it, with no copy
// of its own in flight.
func (m *Manager) cleanOrphans(ctx context.Context, pi PartitionInfo) error {
	segs, _ := m.segments(pi.TopicID, pi.Partition)
	known := map[string]bool{}
	high := copiedEnd(segs)
	changed := false
	for _, s := range segs {
		known[s.Name()] = true
		switch {
		case s.State == CopyStarted || s.State == DeleteStarted:
			if err := m.removeCopy(ctx, pi, s); err != nil {
				return err
			}
			changed = true
		case s.State == DeleteFinished && (!s.Copied || s.EndOffset < high):
			if err := m.meta.PutRemoteSegment(ctx, pi.TopicID, pi.Partition, s.Name(), nil, pi.LeaderEpoch); err != nil {
				return fmt.Errorf("remote: prune record %s: %w", s.Name(), err)
			}
			changed = true
		}
	}
	prefix := dir(pi.Topic, pi.TopicID, pi.Partition)
	// Object deletes are not fenced by leader epoch. Objects written after
	// the view was loaded may be a newer leader's copy in flight, which
	// this view cannot know; only those older than the view by the grace
	// period count as orphans, so a deposed leader's late pass never
	// deletes them.
	m.mu.Lock()
	var loaded time.Time
	if v, ok := m.parts[pkey{pi.TopicID, pi.Partition}]; ok {
		loaded = v.loaded
	}
	m.mu.Unlock()
	cutoff := loaded.Add(-m.opts.OrphanGrace)
	for obj, err := range m.store.List(ctx, prefix) {
		if err != nil {
			return fmt.Errorf("remote: list %s: %w", prefix, err)
		}
		name := strings.TrimPrefix(obj.Key, prefix)
		i := strings.LastIndexByte(name, '.')
		if i < 0 || name == "manifest.json" || known[name[:i]] || obj.ModTime.After(cutoff) {
			continue
		}
		if err := m.store.Delete(ctx, obj.Key); err != nil && !errors.Is(err, objstore.ErrNotExist) {
			return fmt.Errorf("remote: delete orphan %s: %w", obj.Key, err)
		}
		m.log.Info("remote: deleted orphan object", "key", obj.Key)
	}
	if changed {
		_, err := m.refresh(ctx, pi.TopicID, pi.Partition, pi.Topic)
		return err
	}
	return nil
}
