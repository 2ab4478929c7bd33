package console

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// describeCluster answers 403 (false) unless the user may DESCRIBE the
// cluster: what Kafka asks of DescribeAcls, DescribeUserScramCredentials
// and DescribeClientQuotas.
func (s *Server) describeCluster(q *req, what string) bool {
	if q.be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
		return true
	}
	s.fail(q, http.StatusForbidden, fmt.Errorf("%s: describe the cluster: %w", what, errDenied))
	return false
}

// aclRow is one ACL binding, its enums named.
type aclRow struct {
	Principal, Host, Operation, Permission string
	ResourceType, ResourceName, Pattern    string
}

// aclsData is the ACL page's data.
type aclsData struct {
	Rows   []aclRow
	Filter string
	Total  int
}

// acls lists the cluster's ACL bindings from the metadata cache,
// filtered by a substring of the principal or resource name.
func (s *Server) acls(q *req) {
	if !s.describeCluster(q, "ACLs") {
		return
	}
	all, _ := q.env.Cache.ACLs()
	d := aclsData{Filter: q.r.FormValue("filter"), Total: len(all)}
	for _, a := range all {
		if d.Filter != "" && !strings.Contains(a.Principal, d.Filter) && !strings.Contains(a.ResourceName, d.Filter) {
			continue
		}
		d.Rows = append(d.Rows, aclRow{Principal: a.Principal, Host: a.Host, Operation: a.Operation.String(), Permission: a.Permission.String(),
			ResourceType: a.ResourceType.String(), ResourceName: a.ResourceName, Pattern: a.PatternType.String()})
	}
	s.render(q, "acls", "ACLs", "acls", d)
}

// userRow is one SCRAM user: its name and its mechanisms with their
// iteration counts. Salts and keys never leave the cache.
type userRow struct {
	Name       string
	Mechanisms []string // e.g. "SCRAM-SHA-256 (4096 iterations)"
}

// users lists the SCRAM users.
func (s *Server) users(q *req) {
	if !s.describeCluster(q, "users") {
		return
	}
	var rows []userRow
	for name, creds := range q.env.Cache.ScramUsers() {
		r := userRow{Name: name}
		for _, mech := range slices.Sorted(maps.Keys(creds)) {
			r.Mechanisms = append(r.Mechanisms, fmt.Sprintf("%s (%d iterations)", mech, creds[mech].Iterations))
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b userRow) int { return cmp.Compare(a.Name, b.Name) })
	s.render(q, "users", "Users", "users", rows)
}

// quotaRow is one client-quota entity and its values.
type quotaRow struct {
	User, ClientID, IP string // "": not part of the entity
	Values             []string
}

// quotas lists the client quotas by entity.
func (s *Server) quotas(q *req) {
	if !s.describeCluster(q, "quotas") {
		return
	}
	var rows []quotaRow
	for e, vals := range q.env.Cache.ClientQuotas() {
		r := quotaRow{User: e.User, ClientID: e.ClientID, IP: e.IP}
		for _, k := range slices.Sorted(maps.Keys(vals)) {
			r.Values = append(r.Values, k+"="+strconv.FormatFloat(vals[k], 'f', -1, 64))
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b quotaRow) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.IP, b.IP))
	})
	s.render(q, "quotas", "Client quotas", "quotas", struct {
		Rows    []quotaRow
		Default string
	}{rows, metadata.QuotaDefault})
}
