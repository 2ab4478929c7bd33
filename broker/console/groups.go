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
)

// groupRow is one group of the list.
type groupRow struct {
	Name        string
	State       string
	Protocol    string // classic or consumer
	Coordinator int32
}

// groupsData is the group list's data.
type groupsData struct {
	Rows   []groupRow
	Filter string
	Errs   []string
}

func (s *Server) groups(q *req) {
	d := groupsData{Filter: q.r.FormValue("filter")}
	ctx, cancel := context.WithTimeout(q.r.Context(), peerWait)
	defer cancel()
	for _, b := range q.env.Cache.Brokers() {
		req := kmsg.NewPtrListGroupsRequest()
		res, err := q.be.on(ctx, b.ID, req)
		if err != nil {
			d.Errs = append(d.Errs, err.Error())
			continue
		}
		lr := res.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(lr.ErrorCode); err != nil {
			d.Errs = append(d.Errs, fmt.Sprintf("broker %d: %v", b.ID, err))
			continue
		}
		for _, g := range lr.Groups {
			if d.Filter != "" && !strings.Contains(g.Group, d.Filter) {
				continue
			}
			if !q.be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
				continue
			}
			proto := g.GroupType
			if proto == "" {
				proto = "classic"
			}
			d.Rows = append(d.Rows, groupRow{Name: g.Group, State: g.GroupState, Protocol: proto, Coordinator: b.ID})
		}
	}
	slices.SortFunc(d.Rows, func(a, b groupRow) int { return cmp.Compare(a.Name, b.Name) })
	s.render(q, "groups", "Consumer groups", "groups", d)
}

// memberRow is one member of a group with its assignment.
type memberRow struct {
	ID, ClientID, Host string
	Assigned           []string // topic-partition
}

// lagRow is one partition's committed offset and lag.
type lagRow struct {
	Topic     string
	Partition int32
	Committed int64
	End       int64
	Lag       int64
	Err       string
}

// groupData is the group page's data.
type groupData struct {
	Name        string
	State       string
	Protocol    string
	Assignor    string
	Coordinator int32
	Members     []memberRow
	Lags        []lagRow
	TotalLag    int64
	Sort        string
	Preview     []resetRow // a reset waiting for its confirmation
	Reset       resetForm
	Done        string
}

// groupInfo gathers a group's state, members and lag.
func (s *Server) groupInfo(ctx context.Context, q *req, name string) (*groupData, int, error) {
	if !q.be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, name) {
		return nil, http.StatusNotFound, fmt.Errorf("group %q does not exist", name)
	}
	coord, err := coordinator(ctx, q.be, name)
	if err != nil {
		return nil, http.StatusBadGateway, err
	}
	d := &groupData{Name: name, Coordinator: coord, Protocol: "classic"}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{name}
	res, err := q.be.on(ctx, coord, dg)
	if err != nil {
		return nil, http.StatusBadGateway, err
	}
	for _, g := range res.(*kmsg.DescribeGroupsResponse).Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return nil, http.StatusBadGateway, fmt.Errorf("describe group %q: %w", name, err)
		}
		d.State, d.Assignor = g.State, g.Protocol
		for _, m := range g.Members {
			mr := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
			var a kmsg.ConsumerMemberAssignment
			if a.ReadFrom(m.MemberAssignment) == nil {
				for _, t := range a.Topics {
					for _, p := range t.Partitions {
						mr.Assigned = append(mr.Assigned, fmt.Sprintf("%s-%d", t.Topic, p))
					}
				}
			}
			d.Members = append(d.Members, mr)
		}
	}
	if d.State == "" || d.State == "Dead" {
		// A KIP-848 group is described by ConsumerGroupDescribe.
		cg := kmsg.NewPtrConsumerGroupDescribeRequest()
		cg.Groups = []string{name}
		if res, err := q.be.on(ctx, coord, cg); err == nil {
			for _, g := range res.(*kmsg.ConsumerGroupDescribeResponse).Groups {
				if kerr.ErrorForCode(g.ErrorCode) != nil {
					continue
				}
				d.State, d.Protocol, d.Assignor = g.State, "consumer", g.AssignorName
				for _, m := range g.Members {
					mr := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
					for _, t := range m.Assignment.TopicPartitions {
						for _, p := range t.Partitions {
							mr.Assigned = append(mr.Assigned, fmt.Sprintf("%s-%d", t.Topic, p))
						}
					}
					d.Members = append(d.Members, mr)
				}
			}
		}
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group, rg.MemberEpoch = name, -1
	of.Groups = append(of.Groups, rg)
	of.Group = name
	res, err = q.be.on(ctx, coord, of)
	if err != nil {
		return nil, http.StatusBadGateway, err
	}
	byTopic := map[string][]int32{}
	for _, g := range res.(*kmsg.OffsetFetchResponse).Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, http.StatusBadGateway, fmt.Errorf("offsets of group %q: %w", name, err)
		}
		for _, t := range g.Topics {
			if !q.be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic) {
				continue
			}
			for _, p := range t.Partitions {
				d.Lags = append(d.Lags, lagRow{Topic: t.Topic, Partition: p.Partition, Committed: p.Offset, End: -1, Lag: -1})
				byTopic[t.Topic] = append(byTopic[t.Topic], p.Partition)
			}
		}
	}
	// DescribeGroups answers an unknown group as Dead, without an error.
	if (d.State == "" || d.State == "Dead") && len(d.Members) == 0 && len(d.Lags) == 0 {
		return nil, http.StatusNotFound, fmt.Errorf("group %q does not exist", name)
	}
	ends, errs := listOffsetsOf(ctx, q.be, byTopic, -1)
	for i := range d.Lags {
		l := &d.Lags[i]
		if err := errs[l.Topic]; err != nil {
			l.Err = err.Error()
			continue
		}
		l.End = ends[l.Topic][l.Partition]
		if l.Committed >= 0 {
			l.Lag = max(0, l.End-l.Committed)
		} else {
			l.Lag = l.End
		}
		d.TotalLag += l.Lag
	}
	return d, 0, nil
}

// coordinator is the broker that coordinates group name.
func coordinator(ctx context.Context, be *backend, name string) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys = name, []string{name}
	res, err := be.local(ctx, req)
	if err != nil {
		return -1, err
	}
	fr := res.(*kmsg.FindCoordinatorResponse)
	if len(fr.Coordinators) > 0 {
		c := fr.Coordinators[0]
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return -1, fmt.Errorf("coordinator of group %q: %w", name, err)
		}
		return c.NodeID, nil
	}
	if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
		return -1, fmt.Errorf("coordinator of group %q: %w", name, err)
	}
	return fr.NodeID, nil
}

// lagSorts are the lag table's sortable columns.
var lagSorts = map[string]func(a, b lagRow) int{
	"partition": func(a, b lagRow) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	},
	"lag": func(a, b lagRow) int { return cmp.Compare(b.Lag, a.Lag) },
}

func (s *Server) group(q *req) {
	ctx, cancel := context.WithTimeout(q.r.Context(), peerWait)
	defer cancel()
	d, code, err := s.groupInfo(ctx, q, q.r.PathValue("group"))
	if err != nil {
		s.fail(q, code, err)
		return
	}
	d.Sort = q.r.FormValue("sort")
	if d.Sort == "" {
		d.Sort = "partition"
	}
	less, ok := lagSorts[d.Sort]
	if !ok {
		s.fail(q, http.StatusBadRequest, fmt.Errorf("sort: unknown column %q", d.Sort))
		return
	}
	slices.SortStableFunc(d.Lags, func(a, b lagRow) int { return cmp.Or(less(a, b), lagSorts["partition"](a, b)) })
	d.Reset.To = "earliest"
	s.render(q, "group", "Group "+d.Name, "groups", d)
}
