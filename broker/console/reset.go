package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// resetForm is an offsets reset as the form asks it: To is earliest,
// latest, timestamp or offset; Topic "" means every topic the group has
// offsets for.
type resetForm struct {
	To        string
	Topic     string
	Timestamp string
	Offset    int64
}

// resetRow is one partition of a reset: from its committed offset to New.
type resetRow struct {
	Topic     string
	Partition int32
	Committed int64
	New       int64
}

// resetOffsets previews a reset (the page asks for a confirmation) and,
// with confirm=yes, commits the new offsets through OffsetCommit as an
// admin of an empty group (generation -1). Refused in read-only mode and
// while the group has members.
func (s *Server) resetOffsets(q *req) {
	name := q.r.PathValue("group")
	ctx, cancel := context.WithTimeout(q.r.Context(), peerWait*3)
	defer cancel()
	d, code, err := s.groupInfo(ctx, q, name)
	if err != nil {
		s.fail(q, code, err)
		return
	}
	if !q.be.allowed(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, name) {
		s.fail(q, http.StatusForbidden, fmt.Errorf("reset offsets of %q: %w", name, errDenied))
		return
	}
	f := resetForm{To: q.r.PostFormValue("to"), Topic: q.r.PostFormValue("topic"), Timestamp: q.r.PostFormValue("ts")}
	if f.Offset, err = intParam(q.r, "offset", 0); err != nil {
		s.fail(q, http.StatusBadRequest, err)
		return
	}
	rows, err := s.resetPlan(ctx, q, d, f)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errDenied) {
			code = http.StatusForbidden
		}
		s.fail(q, code, err)
		return
	}
	d.Reset, d.Sort = f, "partition"
	if q.r.PostFormValue("confirm") != "yes" {
		d.Preview = rows
		s.render(q, "group", "Group "+name, "groups", d)
		return
	}
	if len(d.Members) > 0 || (d.State != "Empty" && d.State != "" && d.State != "Dead") {
		s.fail(q, http.StatusConflict, fmt.Errorf("group %q is %s with %d members: stop its consumers before resetting its offsets", name, d.State, len(d.Members)))
		return
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = name, -1, ""
	byTopic := map[string]int{}
	for _, r := range rows {
		i, ok := byTopic[r.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[r.Topic] = i
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = r.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = r.Partition, r.New, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	res, err := q.be.on(ctx, d.Coordinator, req)
	if err != nil {
		s.fail(q, http.StatusBadGateway, err)
		return
	}
	for _, t := range res.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				s.fail(q, kafkaStatus(p.ErrorCode), fmt.Errorf("reset %s-%d: %w", t.Topic, p.Partition, err))
				return
			}
		}
	}
	http.Redirect(q.w, q.r, "/groups/"+name+"?reset=done", http.StatusSeeOther)
}

// resetPlan computes each partition's new offset.
func (s *Server) resetPlan(ctx context.Context, q *req, d *groupData, f resetForm) ([]resetRow, error) {
	byTopic := map[string][]int32{}
	var rows []resetRow
	for _, l := range d.Lags {
		if f.Topic != "" && l.Topic != f.Topic {
			continue
		}
		rows = append(rows, resetRow{Topic: l.Topic, Partition: l.Partition, Committed: l.Committed})
		byTopic[l.Topic] = append(byTopic[l.Topic], l.Partition)
	}
	if f.Topic != "" && len(rows) == 0 {
		t, ok := q.env.Cache.Topic(f.Topic)
		if !ok {
			return nil, fmt.Errorf("topic %q does not exist", f.Topic)
		}
		for i := range int32(len(t.Partitions)) {
			rows = append(rows, resetRow{Topic: f.Topic, Partition: i, Committed: -1})
			byTopic[f.Topic] = append(byTopic[f.Topic], i)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("group %q has no committed offsets; name a topic to reset", d.Name)
	}
	var ts int64
	switch f.To {
	case "earliest", "latest":
	case "timestamp":
		var err error
		if ts, err = parseTime(f.Timestamp); err != nil {
			return nil, err
		}
	case "offset":
		if f.Offset < 0 {
			return nil, fmt.Errorf("offset: %d is negative", f.Offset)
		}
	default:
		return nil, fmt.Errorf("to: want earliest, latest, timestamp or offset, not %q", f.To)
	}
	for topic, parts := range byTopic {
		if !q.be.allowed(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, topic) {
			return nil, fmt.Errorf("read topic %q: %w", topic, errDenied)
		}
		lo, err := listOffsets(ctx, q.be, topic, parts, -2)
		if err != nil {
			return nil, err
		}
		hi, err := listOffsets(ctx, q.be, topic, parts, -1)
		if err != nil {
			return nil, err
		}
		at := hi // latest
		switch f.To {
		case "earliest":
			at = lo
		case "timestamp":
			if at, err = listOffsets(ctx, q.be, topic, parts, ts); err != nil {
				return nil, err
			}
		}
		for i := range rows {
			r := &rows[i]
			if r.Topic != topic {
				continue
			}
			switch {
			case f.To == "offset":
				r.New = min(max(f.Offset, lo[r.Partition]), hi[r.Partition])
			case at[r.Partition] < 0: // no record that late
				r.New = hi[r.Partition]
			default:
				r.New = at[r.Partition]
			}
		}
	}
	slices.SortFunc(rows, func(a, b resetRow) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return rows, nil
}
