package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// topicRow is one topic of the list. HotBytes are on the brokers' disks
// (every replica), ColdBytes in object storage (once).
type topicRow struct {
	Name        string
	Partitions  int
	Replication int
	URP         int
	Offline     int
	HotBytes    int64
	ColdBytes   int64
	Lag         int64 // consumer lag summed over the groups; -1: no commits
}

// topicsData is the topic list's data.
type topicsData struct {
	pageInfo
	Rows                []topicRow
	Filter, Sort, Order string
	Internal            bool
}

// topicSorts are the sortable columns.
var topicSorts = map[string]func(a, b topicRow) int{
	"name":       func(a, b topicRow) int { return cmp.Compare(a.Name, b.Name) },
	"partitions": func(a, b topicRow) int { return cmp.Compare(a.Partitions, b.Partitions) },
	"size":       func(a, b topicRow) int { return cmp.Compare(a.HotBytes+a.ColdBytes, b.HotBytes+b.ColdBytes) },
	"hot":        func(a, b topicRow) int { return cmp.Compare(a.HotBytes, b.HotBytes) },
	"cold":       func(a, b topicRow) int { return cmp.Compare(a.ColdBytes, b.ColdBytes) },
	"urp":        func(a, b topicRow) int { return cmp.Compare(a.URP, b.URP) },
	"lag":        func(a, b topicRow) int { return cmp.Compare(a.Lag, b.Lag) },
}

func (s *Server) topics(q *req) {
	d := topicsData{Filter: q.r.FormValue("filter"), Sort: q.r.FormValue("sort"), Order: q.r.FormValue("order"),
		Internal: q.r.FormValue("internal") == "1"}
	if d.Sort == "" {
		d.Sort = "name"
	}
	less, ok := topicSorts[d.Sort]
	if !ok {
		s.fail(q, http.StatusBadRequest, fmt.Errorf("sort: unknown column %q", d.Sort))
		return
	}
	if d.Order != "desc" {
		d.Order = "asc"
	}
	pr, ok := s.pageOf(q)
	if !ok {
		return
	}
	v := s.tierView(q)
	lags := s.lagsByTopic(q.env)
	groupOK := map[string]bool{} // the user may describe the group
	all := q.env.Cache.Topics()
	rows := make([]topicRow, 0, len(all))
	for _, t := range all {
		if d.Filter != "" && !strings.Contains(t.Name, d.Filter) {
			continue
		}
		if !d.Internal && strings.HasPrefix(t.Name, "__") {
			continue
		}
		if !q.be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Name) {
			continue
		}
		r := topicRow{Name: t.Name, Partitions: len(t.Partitions), HotBytes: v.hot[t.Name], ColdBytes: v.cold[t.Name], Lag: -1}
		for _, gl := range lags[t.Name] {
			ok, seen := groupOK[gl.Group]
			if !seen {
				ok = q.be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, gl.Group)
				groupOK[gl.Group] = ok
			}
			if ok {
				r.Lag = max(r.Lag, 0) + gl.Lag
			}
		}
		for _, p := range t.Partitions {
			r.Replication = max(r.Replication, len(p.Replicas))
			if len(p.ISR) < len(p.Replicas) {
				r.URP++
			}
			if p.Leader < 0 {
				r.Offline++
			}
		}
		rows = append(rows, r)
	}
	if d.Sort != "name" || d.Order == "desc" {
		slices.SortStableFunc(rows, func(a, b topicRow) int {
			if d.Order == "desc" {
				return cmp.Or(less(b, a), cmp.Compare(a.Name, b.Name))
			}
			return cmp.Or(less(a, b), cmp.Compare(a.Name, b.Name))
		})
	}
	d.Rows, d.pageInfo = paginate(rows, pr, "/topics", "filter", d.Filter, "sort", d.Sort, "order", d.Order, "internal", b01(d.Internal))
	s.render(q, "topics", "Topics", "topics", d)
}

// partitionRow is one partition of the topic page. Offsets are -1 when
// not known (a replica of another broker that did not answer).
type partitionRow struct {
	Partition                         int32
	Leader                            int32
	Epoch                             int32
	Replicas, ISR                     []int32
	LogStart, LocalStart, RemoteStart int64
	HW, LSO, LEO                      int64
	URP                               bool
	Err                               string
}

// topicData is the topic page's data.
type topicData struct {
	Name       string
	ID         string
	Partitions []partitionRow
	Configs    []configRow
	ConfigErr  string
	Tier       []replicaState // by partition, as each leader reports it
	Messages   int64          // HW - log start, summed
}

// topicOf looks a topic up for a page; false (answered) when it does not
// exist or the user may not describe it.
func (s *Server) topicOf(q *req) (metadata.Topic, bool) {
	name := q.r.PathValue("topic")
	t, ok := q.env.Cache.Topic(name)
	if !ok || !q.be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name) {
		s.fail(q, http.StatusNotFound, fmt.Errorf("topic %q does not exist", name))
		return metadata.Topic{}, false
	}
	return t, true
}

func (s *Server) topic(q *req) {
	t, ok := s.topicOf(q)
	if !ok {
		return
	}
	d := topicData{Name: t.Name, ID: fmt.Sprintf("%x", t.ID[:])}
	ctx, cancel := context.WithTimeout(q.r.Context(), peerWait)
	defer cancel()
	d.Partitions = partitionRows(ctx, q.be, t)
	for _, p := range d.Partitions {
		if p.HW >= 0 && p.LogStart >= 0 {
			d.Messages += p.HW - p.LogStart
		}
	}
	var err error
	if d.Configs, err = describeConfigs(ctx, q.be, q.be.self(), kmsg.ConfigResourceTypeTopic, t.Name); err != nil {
		d.ConfigErr = err.Error()
	}
	d.Tier = s.tierView(q).tierRows(t.Name)
	for _, tr := range d.Tier {
		if i := int(tr.Partition); i < len(d.Partitions) && d.Partitions[i].Partition == tr.Partition {
			d.Partitions[i].RemoteStart = tr.Tier.RemoteStart
		}
	}
	s.render(q, "topic", t.Name, "topics", d)
}

// partitionRows builds the partition table: the offsets of partitions
// led here from their logs, of the others from their leaders'
// ListOffsets (earliest, earliest local, latest, last stable).
func partitionRows(ctx context.Context, be *backend, t metadata.Topic) []partitionRow {
	rows := make([]partitionRow, 0, len(t.Partitions))
	byLeader := map[int32][]int{}
	for i := range int32(len(t.Partitions)) {
		st, ok := t.Partitions[i]
		if !ok {
			continue
		}
		r := partitionRow{Partition: i, Leader: st.Leader, Epoch: st.LeaderEpoch, Replicas: st.Replicas, ISR: st.ISR,
			URP: len(st.ISR) < len(st.Replicas), LogStart: -1, LocalStart: -1, RemoteStart: -1, HW: -1, LSO: -1, LEO: -1}
		if be.env.Partitions != nil && st.Leader == be.self() {
			if p, ok := be.env.Partitions.Get(t.Name, i); ok {
				r.LogStart, r.LocalStart, r.HW, r.LSO, r.LEO = p.LogStartOffset(), p.LocalLogStartOffset(), p.HighWatermark(), p.LastStableOffset(), p.Log().LogEndOffset()
				rows = append(rows, r)
				continue
			}
		}
		if st.Leader >= 0 {
			byLeader[st.Leader] = append(byLeader[st.Leader], len(rows))
		}
		rows = append(rows, r)
	}
	for leader, idx := range byLeader {
		for _, ask := range []struct {
			ts        int64
			isolation int8
			set       func(r *partitionRow, off int64)
		}{
			{-2, 0, func(r *partitionRow, off int64) { r.LogStart = off }},
			{-4, 0, func(r *partitionRow, off int64) { r.LocalStart = off }},
			{-1, 0, func(r *partitionRow, off int64) { r.HW = off }},
			{-1, 1, func(r *partitionRow, off int64) { r.LSO = off }},
		} {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID, req.IsolationLevel = -1, ask.isolation
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = t.Name
			for _, i := range idx {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = rows[i].Partition, ask.ts, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			res, err := be.on(ctx, leader, req)
			if err != nil {
				for _, i := range idx {
					rows[i].Err = err.Error()
				}
				break
			}
			for _, tt := range res.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range tt.Partitions {
					if int(p.Partition) >= len(rows) || rows[p.Partition].Partition != p.Partition {
						continue
					}
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						rows[p.Partition].Err = err.Error()
						continue
					}
					ask.set(&rows[p.Partition], p.Offset)
				}
			}
		}
	}
	return rows
}

// createTopic creates a topic from the form (name, partitions,
// replication factor) through CreateTopics.
func (s *Server) createTopic(q *req) {
	name := strings.TrimSpace(q.r.PostFormValue("name"))
	parts, err := intParam(q.r, "partitions", -1)
	if err != nil {
		s.fail(q, http.StatusBadRequest, err)
		return
	}
	rf, err := intParam(q.r, "replication", -1)
	if err != nil {
		s.fail(q, http.StatusBadRequest, err)
		return
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, int32(parts), int16(rf)
	req.Topics = append(req.Topics, rt)
	res, err := q.be.local(q.r.Context(), req)
	if err != nil {
		s.fail(q, http.StatusInternalServerError, err)
		return
	}
	for _, t := range res.(*kmsg.CreateTopicsResponse).Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			msg := err.Error()
			if t.ErrorMessage != nil {
				msg += ": " + *t.ErrorMessage
			}
			s.fail(q, kafkaStatus(t.ErrorCode), fmt.Errorf("create topic %q: %s", name, msg))
			return
		}
	}
	http.Redirect(q.w, q.r, "/topics/"+name, http.StatusSeeOther)
}

// deleteTopic deletes the topic through DeleteTopics; the form repeats
// the topic's name as its confirmation.
func (s *Server) deleteTopic(q *req) {
	name := q.r.PathValue("topic")
	if q.r.PostFormValue("confirm") != name {
		s.fail(q, http.StatusBadRequest, fmt.Errorf("type the topic's name %q to confirm the deletion", name))
		return
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = &name
	req.Topics = append(req.Topics, rt)
	res, err := q.be.local(q.r.Context(), req)
	if err != nil {
		s.fail(q, http.StatusInternalServerError, err)
		return
	}
	for _, t := range res.(*kmsg.DeleteTopicsResponse).Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			s.fail(q, kafkaStatus(t.ErrorCode), fmt.Errorf("delete topic %q: %w", name, err))
			return
		}
	}
	http.Redirect(q.w, q.r, "/topics", http.StatusSeeOther)
}

// kafkaStatus maps a Kafka error code to an HTTP status.
func kafkaStatus(code int16) int {
	switch code {
	case kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code:
		return http.StatusForbidden
	case kerr.UnknownTopicOrPartition.Code, kerr.GroupIDNotFound.Code:
		return http.StatusNotFound
	case kerr.TopicAlreadyExists.Code, kerr.NonEmptyGroup.Code:
		return http.StatusConflict
	case kerr.InvalidTopicException.Code, kerr.InvalidPartitions.Code, kerr.InvalidReplicationFactor.Code,
		kerr.InvalidRequest.Code, kerr.InvalidConfig.Code, kerr.PolicyViolation.Code, kerr.OffsetOutOfRange.Code:
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// alterConfig sets (op=set) or removes (op=delete, back to the default)
// one of the topic's configs through IncrementalAlterConfigs.
func (s *Server) alterConfig(q *req) {
	t, ok := s.topicOf(q)
	if !ok {
		return
	}
	name := strings.TrimSpace(q.r.PostFormValue("name"))
	value := q.r.PostFormValue("value")
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = name, &value
	switch q.r.PostFormValue("op") {
	case "set":
		rc.Op = kmsg.IncrementalAlterConfigOpSet
	case "delete":
		rc.Op, rc.Value = kmsg.IncrementalAlterConfigOpDelete, nil
	default:
		s.fail(q, http.StatusBadRequest, fmt.Errorf("op: want set or delete, not %q", q.r.PostFormValue("op")))
		return
	}
	if name == "" {
		s.fail(q, http.StatusBadRequest, errors.New("name: which config?"))
		return
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.Configs = kmsg.ConfigResourceTypeTopic, t.Name, []kmsg.IncrementalAlterConfigsRequestResourceConfig{rc}
	req.Resources = append(req.Resources, rr)
	res, err := q.be.local(q.r.Context(), req)
	if err != nil {
		s.fail(q, http.StatusInternalServerError, err)
		return
	}
	for _, r := range res.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := err.Error()
			if r.ErrorMessage != nil {
				msg += ": " + *r.ErrorMessage
			}
			s.fail(q, kafkaStatus(r.ErrorCode), fmt.Errorf("alter %s of %q: %s", name, t.Name, msg))
			return
		}
	}
	http.Redirect(q.w, q.r, "/topics/"+t.Name, http.StatusSeeOther)
}
