package broker

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
	"github.com/strata-broker/strata/tier/remote"
)

// The admin endpoints share metrics.listener with /metrics; `strata tier`
// calls them. Answers are JSON; failures are {"error": "..."} with a 4xx
// or 5xx status.
//
//	GET  /v1/tier/status[?topic=T]   TierStatus: the partitions this broker hosts
//	POST /v1/tier/restore            TierRestoreRequest → TierRestoreResult
//	POST /v1/tier/start?topic=T[&rev=R]  TierRestoreResult: StartAfterTier on the partitions led here
const (
	tierStatusPath  = "/v1/tier/status"
	tierRestorePath = "/v1/tier/restore"
	tierStartPath   = "/v1/tier/start"
)

// TierPartitionStatus is one partition replica's tiering state.
type TierPartitionStatus struct {
	Broker          int32  `json:"broker"`
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	TopicID         string `json:"topic_id"` // hex, as in object keys
	Tiered          bool   `json:"tiered"`   // remote.storage.enable
	Leader          bool   `json:"leader"`
	LocalStart      int64  `json:"local_start"`
	LocalBytes      int64  `json:"local_bytes"`
	LocalSegments   int    `json:"local_segments"`
	LogEnd          int64  `json:"log_end"`
	HighWatermark   int64  `json:"high_watermark"`
	RemoteStart     int64  `json:"remote_start"` // -1: nothing tiered
	RemoteEnd       int64  `json:"remote_end"`   // -1: nothing tiered
	RemoteBytes     int64  `json:"remote_bytes"`
	RemoteCopies    int    `json:"remote_copies"`
	CopyLagSegments int    `json:"copy_lag_segments"` // sealed, committed, not yet copied (leader)
	CopyLagBytes    int64  `json:"copy_lag_bytes"`
	LastError       string `json:"last_error,omitempty"`
}

// TierStatus answers GET /v1/tier/status.
type TierStatus struct {
	Broker         int32                 `json:"broker"`
	TieringEnabled bool                  `json:"tiering_enabled"` // remote.log.storage.system.enable
	Partitions     []TierPartitionStatus `json:"partitions"`
}

// TierRestoreRequest asks to recreate a topic from the bucket alone.
type TierRestoreRequest struct {
	Topic             string            `json:"topic"`
	TopicID           string            `json:"topic_id,omitempty"`           // hex; needed when the bucket holds several
	Partitions        int32             `json:"partitions,omitempty"`         // 0: as the manifests recorded
	ReplicationFactor int16             `json:"replication_factor,omitempty"` // 0: default.replication.factor, at most the live brokers
	Configs           map[string]string `json:"configs,omitempty"`            // over the manifests' overrides; remote.storage.enable=true is added
}

// TierRestoredPartition is one partition of a restored topic.
type TierRestoredPartition struct {
	Partition   int32 `json:"partition"`
	Leader      int32 `json:"leader"`
	Copies      int   `json:"copies"`       // remote copies restored
	RemoteStart int64 `json:"remote_start"` // -1: none
	RemoteEnd   int64 `json:"remote_end"`   // -1: none
	RemoteBytes int64 `json:"remote_bytes"`
	// Started: the leader's local log starts after the tier (LogEnd);
	// false while the leader is another broker that was not asked yet.
	Started bool  `json:"started"`
	LogEnd  int64 `json:"log_end"`
}

// TierRestoreResult answers POST /v1/tier/restore and /v1/tier/start.
type TierRestoreResult struct {
	Topic      string                  `json:"topic"`
	TopicID    string                  `json:"topic_id"`
	Broker     int32                   `json:"broker"` // the broker that answered
	Partitions []TierRestoredPartition `json:"partitions"`
	Missing    []string                `json:"missing,omitempty"` // copies a manifest names whose objects are gone
	// Revision is the etcd revision that created the topic; pass it as
	// rev to /v1/tier/start so that broker waits until it sees the topic.
	Revision int64 `json:"revision,omitempty"`
}

// startWait bounds how long /v1/tier/start waits for the metadata to
// catch up with a restore.
const startWait = 30 * time.Second

// admin serves the admin endpoints of one broker.
type admin struct {
	cfg   *config.Live // topics are checked against its current configuration
	store metadata.TopicRestorer
	cache *metadata.Cache
	parts *partition.Manager
	tier  *tiering
	log   *slog.Logger
}

// mount adds the admin endpoints to mux.
func (a *admin) mount(mux *http.ServeMux) {
	mux.HandleFunc("GET "+tierStatusPath, a.status)
	mux.HandleFunc("POST "+tierRestorePath, a.restore)
	mux.HandleFunc("POST "+tierStartPath, a.start)
}

func (a *admin) status(w http.ResponseWriter, r *http.Request) {
	topic := r.URL.Query().Get("topic")
	out := TierStatus{Broker: a.cfg.Load().NodeID, TieringEnabled: a.tier.m != nil, Partitions: []TierPartitionStatus{}}
	for _, p := range a.parts.All() {
		if topic != "" && p.Topic != topic {
			continue
		}
		l := p.Log()
		ps := TierPartitionStatus{
			Broker: a.cfg.Load().NodeID, Topic: p.Topic, Partition: p.Index, TopicID: hex.EncodeToString(p.TopicID[:]),
			Tiered: p.Config().RemoteStorageEnable, Leader: p.IsLeader(), LocalStart: l.LogStartOffset(),
			LogEnd: l.LogEndOffset(), HighWatermark: p.HighWatermark(), RemoteStart: -1, RemoteEnd: -1,
		}
		for _, s := range l.Segments() {
			ps.LocalBytes += s.Size
			ps.LocalSegments++
		}
		if a.tier.m != nil {
			st := a.tier.m.StatusOf(p.RemoteInfo())
			ps.RemoteStart, ps.RemoteEnd, ps.RemoteBytes, ps.RemoteCopies = st.RemoteStart, st.RemoteEnd, st.RemoteBytes, st.RemoteCopies
			ps.CopyLagSegments, ps.CopyLagBytes, ps.LastError = st.CopyBacklog, st.CopyBacklogBytes, st.LastError
		}
		out.Partitions = append(out.Partitions, ps)
	}
	slices.SortFunc(out.Partitions, func(x, y TierPartitionStatus) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	writeJSON(w, http.StatusOK, out)
}

// restore recreates a topic from the bucket: its manifests give the topic
// id, the partitions and the finished copies; the topic is created with
// that id, the copies' records are written to etcd, and the leaders'
// empty logs start after the tier (those led here at once; others on
// POST /v1/tier/start to their broker).
func (a *admin) restore(w http.ResponseWriter, r *http.Request) {
	var req TierRestoreRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("decode restore request: %w", err))
		return
	}
	if a.tier.m == nil {
		writeError(w, http.StatusBadRequest, errors.New("tiered storage is disabled on this broker (remote.log.storage.system.enable=false)"))
		return
	}
	if err := metadata.ValidateTopicName(req.Topic); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if _, ok := a.cache.Topic(req.Topic); ok {
		writeError(w, http.StatusConflict, fmt.Errorf("topic %q exists; restore only recreates a lost topic", req.Topic))
		return
	}
	var id metadata.TopicID
	if req.TopicID != "" {
		b, err := hex.DecodeString(req.TopicID)
		if err != nil || len(b) != len(id) {
			writeError(w, http.StatusBadRequest, fmt.Errorf("topic id %q: want %d hex digits", req.TopicID, 2*len(id)))
			return
		}
		copy(id[:], b)
	}
	bt, err := a.tier.m.FindTopic(r.Context(), req.Topic, id)
	switch {
	case errors.Is(err, remote.ErrNotInBucket):
		writeError(w, http.StatusNotFound, err)
		return
	case errors.Is(err, remote.ErrAmbiguousTopic):
		writeError(w, http.StatusConflict, fmt.Errorf("%w (pick one with --topic-id)", err))
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	t, records, err := a.restoredTopic(req, bt)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	rev, err := a.store.RestoreTopic(r.Context(), t, records)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, metadata.ErrTopicExists) || errors.Is(err, metadata.ErrTopicIDInUse) {
			code = http.StatusConflict
		}
		writeError(w, code, err)
		return
	}
	a.log.Info("restored topic from the bucket", "topic", t.Name, "id", hex.EncodeToString(t.ID[:]), "partitions", len(t.Partitions))
	res, err := a.startAfterTier(r.Context(), t.Name, bt)
	res.Missing, res.Revision = bt.Missing, rev
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("topic %q recreated, but starting its logs failed (retry with strata tier restore --resume): %w", t.Name, err))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// restoredTopic builds the topic to create and its partitions' records:
// the partition count and configs the manifests recorded (the request's
// win; never fewer partitions than the bucket holds) with
// remote.storage.enable=true, replicas placed on the live brokers, and
// leader epochs above any the copies hold.
func (a *admin) restoredTopic(req TierRestoreRequest, bt remote.BucketTopic) (metadata.Topic, map[int32]map[string][]byte, error) {
	n := max(bt.MaxPart+1, bt.Partitions)
	if req.Partitions > 0 {
		if req.Partitions <= bt.MaxPart {
			return metadata.Topic{}, nil, fmt.Errorf("%d partitions asked but the bucket holds partition %d", req.Partitions, bt.MaxPart)
		}
		n = req.Partitions
	}
	configs := map[string]string{}
	maps.Copy(configs, bt.Configs)
	maps.Copy(configs, req.Configs)
	configs["remote.storage.enable"] = "true"
	if err := a.cfg.Load().ValidateTopic(configs); err != nil {
		return metadata.Topic{}, nil, err
	}
	brokers := a.cache.Brokers()
	rf := req.ReplicationFactor
	if rf <= 0 {
		rf = min(a.cfg.Load().DefaultReplicationFactor, int16(len(brokers)))
	}
	parts, err := controller.Place(brokers, n, rf, -1)
	if err != nil {
		return metadata.Topic{}, nil, err
	}
	records := map[int32]map[string][]byte{}
	for p := range n {
		st := parts[p]
		st.LeaderEpoch = bt.MaxEpoch(p) + 1
		parts[p] = st
		recs, err := bt.Records(p)
		if err != nil {
			return metadata.Topic{}, nil, err
		}
		if len(recs) > 0 {
			records[p] = recs
		}
	}
	return metadata.Topic{Name: req.Topic, ID: bt.ID, Configs: configs, Partitions: parts}, records, nil
}

// start answers POST /v1/tier/start?topic=T[&rev=R]: once this broker's
// metadata reached etcd revision R, the restored topic's partitions led
// here start after the tier.
func (a *admin) start(w http.ResponseWriter, r *http.Request) {
	topic := r.URL.Query().Get("topic")
	if v := r.URL.Query().Get("rev"); v != "" {
		rev, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("rev %q: %w", v, err))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), startWait)
		defer cancel()
		if err := a.cache.WaitRevision(ctx, rev); err != nil {
			writeError(w, http.StatusServiceUnavailable, fmt.Errorf("metadata did not reach revision %d: %w", rev, err))
			return
		}
	}
	t, ok := a.cache.Topic(topic)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("unknown topic %q", topic))
		return
	}
	res, err := a.startAfterTier(r.Context(), topic, remote.BucketTopic{ID: t.ID})
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// startAfterTier opens the topic's partitions assigned here and starts
// the empty logs of those led here after the tier; bt (may be empty)
// describes the restored copies.
func (a *admin) startAfterTier(ctx context.Context, topic string, bt remote.BucketTopic) (TierRestoreResult, error) {
	res := TierRestoreResult{Topic: topic, TopicID: hex.EncodeToString(bt.ID[:]), Broker: a.cfg.Load().NodeID}
	if err := a.parts.Sync(); err != nil {
		a.log.Error("open partitions of restored topic", "topic", topic, "err", err)
	}
	t, ok := a.cache.Topic(topic)
	if !ok {
		return res, fmt.Errorf("topic %q vanished", topic)
	}
	var errs []error
	for _, idx := range slices.Sorted(maps.Keys(t.Partitions)) {
		rp := TierRestoredPartition{Partition: idx, Leader: t.Partitions[idx].Leader, RemoteStart: -1, RemoteEnd: -1, LogEnd: -1}
		for _, s := range bt.Copies[idx] {
			if rp.RemoteStart < 0 {
				rp.RemoteStart = s.BaseOffset
			}
			rp.RemoteEnd = max(rp.RemoteEnd, s.EndOffset)
			rp.RemoteBytes += s.Size
			rp.Copies++
		}
		if p, ok := a.parts.Get(topic, idx); ok && p.IsLeader() {
			leo, _, err := p.StartAfterTier(ctx)
			errs = append(errs, err)
			rp.Started, rp.LogEnd = err == nil, leo
		}
		res.Partitions = append(res.Partitions, rp)
	}
	return res, errors.Join(errs...)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to do
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}
