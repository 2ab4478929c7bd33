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

// aclsData is the ACL page's data: a page of the bindings matching
// Filter, of All.
type aclsData struct {
	pageInfo
	Rows   []aclRow
	Filter string
	All    int
}

// acls lists the cluster's ACL bindings from the metadata cache in its
// order, filtered by a substring of the principal or resource name, a
// page at a time.
func (s *Server) acls(q *req) {
	if !s.describeCluster(q, "ACLs") {
		return
	}
	pr, ok := s.pageOf(q)
	if !ok {
		return
	}
	all, _ := q.env.Cache.ACLs()
	d := aclsData{Filter: q.r.FormValue("filter"), All: len(all)}
	var match []metadata.ACL
	for _, a := range all {
		if d.Filter == "" || strings.Contains(a.Principal, d.Filter) || strings.Contains(a.ResourceName, d.Filter) {
			match = append(match, a)
		}
	}
	match, d.pageInfo = paginate(match, pr, "/acls", "filter", d.Filter)
	for _, a := range match {
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

// usersData is the users page's data: a page of the users whose names
// hold Filter.
type usersData struct {
	pageInfo
	Rows   []userRow
	Filter string
}

// users lists the SCRAM users by name, filtered by a substring of the
// name, a page at a time.
func (s *Server) users(q *req) {
	if !s.describeCluster(q, "users") {
		return
	}
	pr, ok := s.pageOf(q)
	if !ok {
		return
	}
	d := usersData{Filter: q.r.FormValue("filter")}
	creds := q.env.Cache.ScramUsers()
	var names []string
	for name := range creds {
		if strings.Contains(name, d.Filter) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	names, d.pageInfo = paginate(names, pr, "/users", "filter", d.Filter)
	for _, name := range names {
		r := userRow{Name: name}
		for _, mech := range slices.Sorted(maps.Keys(creds[name])) {
			r.Mechanisms = append(r.Mechanisms, fmt.Sprintf("%s (%d iterations)", mech, creds[name][mech].Iterations))
		}
		d.Rows = append(d.Rows, r)
	}
	s.render(q, "users", "Users", "users", d)
}

// quotaRow is one client-quota entity and its values.
type quotaRow struct {
	User, ClientID, IP string // "": not part of the entity
	Values             []string
}

// quotasData is the quotas page's data: a page of the entities one of
// whose names holds Filter.
type quotasData struct {
	pageInfo
	Rows    []quotaRow
	Filter  string
	Default string // the name of a type's default entity
}

// quotas lists the client quotas by entity (user, client id, IP),
// filtered by a substring of one of the entity's names, a page at a
// time.
func (s *Server) quotas(q *req) {
	if !s.describeCluster(q, "quotas") {
		return
	}
	pr, ok := s.pageOf(q)
	if !ok {
		return
	}
	d := quotasData{Filter: q.r.FormValue("filter"), Default: metadata.QuotaDefault}
	all := q.env.Cache.ClientQuotas()
	var ents []metadata.QuotaEntity
	for e := range all {
		if d.Filter == "" || strings.Contains(e.User, d.Filter) || strings.Contains(e.ClientID, d.Filter) || strings.Contains(e.IP, d.Filter) {
			ents = append(ents, e)
		}
	}
	slices.SortFunc(ents, func(a, b metadata.QuotaEntity) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.IP, b.IP))
	})
	ents, d.pageInfo = paginate(ents, pr, "/quotas", "filter", d.Filter)
	for _, e := range ents {
		r := quotaRow{User: e.User, ClientID: e.ClientID, IP: e.IP}
		vals := all[e]
		for _, k := range slices.Sorted(maps.Keys(vals)) {
			r.Values = append(r.Values, k+"="+strconv.FormatFloat(vals[k], 'f', -1, 64))
		}
		d.Rows = append(d.Rows, r)
	}
	s.render(q, "quotas", "Client quotas", "quotas", d)
}
