package remote

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/objstore"
)

// ErrNotInBucket means the bucket holds no manifest of the topic (or of
// the topic id asked for).
var ErrNotInBucket = errors.New("remote: topic not found in the bucket")

// ErrAmbiguousTopic means the bucket holds several incarnations (topic
// ids) of the topic name; the caller must pick one.
var ErrAmbiguousTopic = errors.New("remote: several topic ids for the name in the bucket")

// manifestName is the per-partition manifest object (see copy.go).
const manifestName = "manifest.json"

// BucketTopic is what the bucket alone tells of a topic: enough to
// recreate it after its metadata and local logs are lost (disaster
// recovery, `strata tier restore`).
type BucketTopic struct {
	Topic   string
	ID      metadata.TopicID
	MaxPart int32               // highest partition with a manifest
	Copies  map[int32][]Segment // finished copies per partition, by base offset
	Missing []string            // copies a manifest names whose .log object is gone
	// Partitions is the largest partition count a manifest recorded (0:
	// none did); Configs the topic's config overrides as the newest
	// manifest recorded them.
	Partitions int32
	Configs    map[string]string
}

// Incarnation is one topic id found in the bucket for a name.
type Incarnation struct {
	ID           metadata.TopicID
	Manifests    int       // partitions with a manifest
	LastModified time.Time // newest manifest
}

// FindTopic reads the bucket for topic: the manifests of every partition
// under "<topic>-<topic id hex>/". id may be zero when the bucket holds a
// single incarnation of the name; with several, FindTopic fails with
// ErrAmbiguousTopic naming them. Copies whose .log object is gone (a
// manifest written before a deletion finished) are left out.
func FindTopic(ctx context.Context, store objstore.ObjectStore, topic string, id metadata.TopicID, log *slog.Logger) (BucketTopic, error) {
	if log == nil {
		log = slog.Default()
	}
	incs, manifests, err := listManifests(ctx, store, topic)
	if err != nil {
		return BucketTopic{}, err
	}
	if id.IsZero() {
		switch len(incs) {
		case 0:
			return BucketTopic{}, fmt.Errorf("%w: %q", ErrNotInBucket, topic)
		case 1:
			id = incs[0].ID
		default:
			var ids []string
			for _, inc := range incs {
				ids = append(ids, fmt.Sprintf("%x (%d partitions, last manifest %s)", inc.ID[:], inc.Manifests, inc.LastModified.UTC().Format(time.RFC3339)))
			}
			return BucketTopic{}, fmt.Errorf("%w %q: %s", ErrAmbiguousTopic, topic, strings.Join(ids, "; "))
		}
	}
	keys := manifests[id]
	if len(keys) == 0 {
		return BucketTopic{}, fmt.Errorf("%w: %q id %x", ErrNotInBucket, topic, id[:])
	}
	bt := BucketTopic{Topic: topic, ID: id, MaxPart: -1, Copies: map[int32][]Segment{}}
	var newest time.Time
	for _, p := range slices.Sorted(maps.Keys(keys)) {
		mf, err := readManifest(ctx, store, keys[p].Key)
		if err != nil {
			return BucketTopic{}, err
		}
		if mf.Topic != topic || mf.Partition != p || mf.TopicID != hex.EncodeToString(id[:]) {
			return BucketTopic{}, fmt.Errorf("remote: manifest %s names %s-%d id %s", keys[p].Key, mf.Topic, mf.Partition, mf.TopicID)
		}
		bt.MaxPart, bt.Partitions = max(bt.MaxPart, p), max(bt.Partitions, mf.Partitions)
		if mf.Configs != nil && !keys[p].ModTime.Before(newest) {
			bt.Configs, newest = mf.Configs, keys[p].ModTime
		}
		stem := dir(topic, id, p)
		for _, s := range mf.Segments {
			if s.State != CopyFinished {
				continue
			}
			if _, err := store.Head(ctx, stem+s.Name()+".log"); errors.Is(err, objstore.ErrNotExist) {
				log.Warn("remote: manifest names a copy whose object is gone; skipped", "topic", topic, "partition", p, "copy", s.Name())
				bt.Missing = append(bt.Missing, stem+s.Name())
				continue
			} else if err != nil {
				return BucketTopic{}, fmt.Errorf("remote: head %s: %w", stem+s.Name()+".log", err)
			}
			bt.Copies[p] = append(bt.Copies[p], s)
		}
		slices.SortFunc(bt.Copies[p], func(a, b Segment) int { return int(a.BaseOffset - b.BaseOffset) })
	}
	return bt, nil
}

// listManifests finds the manifests of every incarnation of topic: the
// keys "<topic>-<32 hex>/<partition>/manifest.json".
func listManifests(ctx context.Context, store objstore.ObjectStore, topic string) ([]Incarnation, map[metadata.TopicID]map[int32]objstore.ObjectInfo, error) {
	prefix := topic + "-"
	byID := map[metadata.TopicID]*Incarnation{}
	keys := map[metadata.TopicID]map[int32]objstore.ObjectInfo{}
	for obj, err := range store.List(ctx, prefix) {
		if err != nil {
			return nil, nil, fmt.Errorf("remote: list %s: %w", prefix, err)
		}
		id, p, ok := parseManifestKey(obj.Key, prefix)
		if !ok {
			continue
		}
		inc := byID[id]
		if inc == nil {
			inc = &Incarnation{ID: id}
			byID[id] = inc
			keys[id] = map[int32]objstore.ObjectInfo{}
		}
		inc.Manifests++
		if obj.ModTime.After(inc.LastModified) {
			inc.LastModified = obj.ModTime
		}
		keys[id][p] = obj
	}
	var incs []Incarnation
	for _, inc := range byID {
		incs = append(incs, *inc)
	}
	slices.SortFunc(incs, func(a, b Incarnation) int { return b.LastModified.Compare(a.LastModified) })
	return incs, keys, nil
}

// parseManifestKey splits "<prefix><32 hex>/<partition>/manifest.json".
func parseManifestKey(key, prefix string) (metadata.TopicID, int32, bool) {
	var id metadata.TopicID
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || len(rest) < 2*len(id)+1 || rest[2*len(id)] != '/' {
		return id, 0, false
	}
	if _, err := hex.Decode(id[:], []byte(rest[:2*len(id)])); err != nil {
		return id, 0, false
	}
	part, name, ok := strings.Cut(rest[2*len(id)+1:], "/")
	if !ok || name != manifestName {
		return id, 0, false
	}
	p, err := strconv.ParseInt(part, 10, 32)
	if err != nil || p < 0 {
		return id, 0, false
	}
	return id, int32(p), true
}

func readManifest(ctx context.Context, store objstore.ObjectStore, key string) (manifest, error) {
	rc, err := store.GetRange(ctx, key, 0, -1)
	if err != nil {
		return manifest{}, fmt.Errorf("remote: read %s: %w", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return manifest{}, fmt.Errorf("remote: read %s: %w", key, err)
	}
	var mf manifest
	if err := json.Unmarshal(b, &mf); err != nil {
		return manifest{}, fmt.Errorf("remote: decode %s: %w", key, err)
	}
	return mf, nil
}

// MaxEpoch is the highest leader epoch any copy of partition p was
// written under or holds batches of (-1: none); a restored partition's
// leader epoch must be above it.
func (bt BucketTopic) MaxEpoch(p int32) int32 {
	e := int32(-1)
	for _, s := range bt.Copies[p] {
		e = max(e, s.LeaderEpoch)
		for _, ep := range s.Epochs {
			e = max(e, ep.Epoch)
		}
	}
	return e
}

// Records returns partition p's copies as metadata records (name →
// JSON), ready for metadata.RemoteSegments.PutRemoteSegment.
func (bt BucketTopic) Records(p int32) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, s := range bt.Copies[p] {
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("remote: encode segment %s: %w", s.Name(), err)
		}
		out[s.Name()] = b
	}
	return out, nil
}

// FindTopic is FindTopic on the manager's object store.
func (m *Manager) FindTopic(ctx context.Context, topic string, id metadata.TopicID) (BucketTopic, error) {
	return FindTopic(ctx, m.store, topic, id, m.log)
}
