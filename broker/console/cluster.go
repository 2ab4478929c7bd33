package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// peerWait bounds how long a page waits for another broker's answer.
const peerWait = 3 * time.Second

// brokerRow is one broker of the overview.
type brokerRow struct {
	ID          int32
	Rack        string
	Listeners   []string
	Up          bool
	Controller  bool
	Self        bool
	Leading     int
	Replicas    int
	URP         int   // under-replicated partitions it leads
	LocalBytes  int64 // every replica it holds; -1: unknown
	RemoteBytes int64 // the copies of the partitions it leads; -1: unknown
}

// overviewData is the overview page's data.
type overviewData struct {
	ClusterID  string
	Controller int32
	Self       int32
	Etcd       []metadata.EndpointHealth
	Brokers    []brokerRow
	Topics     int
	Partitions int
	URP        int
	Offline    int
}

func (s *Server) overview(q *req) {
	env := q.env
	d := overviewData{ClusterID: env.Store.ClusterID(), Controller: env.ControllerID(), Self: env.Self.ID}
	if !q.be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
		s.fail(q, http.StatusForbidden, fmt.Errorf("describe the cluster: %w", errDenied))
		return
	}
	if s.o.Etcd != nil {
		ctx, cancel := context.WithTimeout(q.r.Context(), peerWait)
		d.Etcd = s.o.Etcd(ctx)
		cancel()
	}
	rows := map[int32]*brokerRow{}
	row := func(id int32) *brokerRow {
		r, ok := rows[id]
		if !ok {
			r = &brokerRow{ID: id, LocalBytes: -1, RemoteBytes: -1}
			rows[id] = r
		}
		return r
	}
	for _, b := range env.Cache.Brokers() {
		r := row(b.ID)
		r.Up, r.Rack = true, b.Rack
		for _, e := range b.Endpoints {
			r.Listeners = append(r.Listeners, fmt.Sprintf("%s://%s:%d", e.Listener, e.Host, e.Port))
		}
	}
	for _, t := range env.Cache.Topics() {
		d.Topics++
		for _, p := range t.Partitions {
			d.Partitions++
			urp := len(p.ISR) < len(p.Replicas)
			if urp {
				d.URP++
			}
			if p.Leader < 0 {
				d.Offline++
			} else {
				r := row(p.Leader)
				r.Leading++
				if urp {
					r.URP++
				}
			}
			for _, id := range p.Replicas {
				row(id).Replicas++
			}
		}
	}
	for _, r := range rows {
		r.Controller, r.Self = r.ID == d.Controller, r.ID == d.Self
	}
	v := s.tierView(q)
	for _, r := range rows {
		r.LocalBytes, r.RemoteBytes = v.brokerBytes(r.ID)
	}
	for _, r := range rows {
		d.Brokers = append(d.Brokers, *r)
	}
	slices.SortFunc(d.Brokers, func(a, b brokerRow) int { return cmp.Compare(a.ID, b.ID) })
	s.render(q, "overview", "Overview", "overview", d)
}

// configRow is one config entry as the console shows it.
type configRow struct {
	Name      string
	Value     string
	Source    string
	Sensitive bool
	ReadOnly  bool
}

// sensitiveName catches secrets a config table did not mark sensitive.
func sensitiveName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"password", "secret", "token", "credential", "private", ".key"} {
		if strings.Contains(n, w) && !strings.HasSuffix(n, ".location") && !strings.HasSuffix(n, ".type") {
			return true
		}
	}
	return false
}

// sourceName is Kafka's config source as the console names it.
func sourceName(src kmsg.ConfigSource) string {
	switch src {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "broker (dynamic)"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "cluster default (dynamic)"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "broker"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	}
	return strings.ToLower(src.String())
}

// describeConfigs asks broker id (this one for a topic) for a resource's
// configs, secrets redacted.
func describeConfigs(ctx context.Context, be *backend, id int32, typ kmsg.ConfigResourceType, name string) ([]configRow, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	req.Resources = append(req.Resources, rr)
	res, err := be.on(ctx, id, req)
	if err != nil {
		return nil, err
	}
	rs := res.(*kmsg.DescribeConfigsResponse).Resources
	if len(rs) != 1 {
		return nil, fmt.Errorf("describe configs of %s: %d resources in the answer", name, len(rs))
	}
	if err := kerr.ErrorForCode(rs[0].ErrorCode); err != nil {
		return nil, fmt.Errorf("describe configs of %s: %w", name, err)
	}
	out := make([]configRow, 0, len(rs[0].Configs))
	for _, c := range rs[0].Configs {
		r := configRow{Name: c.Name, Source: sourceName(c.Source), Sensitive: c.IsSensitive || sensitiveName(c.Name), ReadOnly: c.ReadOnly}
		switch {
		case r.Sensitive: // never held, so never rendered
		case c.Value == nil:
			r.Value = "(null)"
		default:
			r.Value = *c.Value
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b configRow) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// brokersData is the brokers page's data.
type brokersData struct {
	IDs      []int32
	Selected int32
	Configs  []configRow
	Filter   string
	Err      string
}

func (s *Server) brokers(q *req) {
	if !q.be.allowed(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
		s.fail(q, http.StatusForbidden, fmt.Errorf("describe the brokers' configs: %w", errDenied))
		return
	}
	d := brokersData{Selected: q.env.Self.ID, Filter: q.r.FormValue("filter")}
	for _, b := range q.env.Cache.Brokers() {
		d.IDs = append(d.IDs, b.ID)
	}
	if v := q.r.FormValue("id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 32)
		if err != nil || !slices.Contains(d.IDs, int32(id)) {
			s.fail(q, http.StatusNotFound, fmt.Errorf("no live broker %q", v))
			return
		}
		d.Selected = int32(id)
	}
	ctx, cancel := context.WithTimeout(q.r.Context(), peerWait)
	defer cancel()
	rows, err := describeConfigs(ctx, q.be, d.Selected, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(d.Selected)))
	if err != nil {
		d.Err = err.Error()
	}
	for _, r := range rows {
		if d.Filter == "" || strings.Contains(r.Name, d.Filter) {
			d.Configs = append(d.Configs, r)
		}
	}
	s.render(q, "brokers", "Brokers", "brokers", d)
}
