package etcdstore

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/strata-broker/strata/metadata"
)

// quotasDir holds the client quotas, one key per entity (Kafka's
// /config/users, /config/clients and /config/ips in ZooKeeper):
//
//	quotas/users/<user>
//	quotas/users/<user>/clients/<client>
//	quotas/clients/<client>
//	quotas/ips/<ip>
//
// each name path-escaped, metadata.QuotaDefault spelt as is for a default
// entity (path escaping turns a real "<" into %3C, so the two never meet).
const quotasDir = "quotas/"

// quotasRecord is the value of a quotas/ key: the entity's values by key.
type quotasRecord struct {
	Values map[string]float64 `json:"values"`
}

// quotaName is one name of an entity in a key.
func quotaName(name string) string {
	if name == metadata.QuotaDefault {
		return name
	}
	return url.PathEscape(name)
}

// parseQuotaName undoes quotaName; false for an empty or malformed one.
func parseQuotaName(s string) (string, bool) {
	if s == metadata.QuotaDefault {
		return s, true
	}
	name, err := url.PathUnescape(s)
	return name, err == nil && name != ""
}

// quotas is the key of entity e, which Validate accepted.
func (k keys) quotas(e metadata.QuotaEntity) string {
	switch {
	case e.IP != "":
		return k.root + quotasDir + "ips/" + quotaName(e.IP)
	case e.User == "":
		return k.root + quotasDir + "clients/" + quotaName(e.ClientID)
	case e.ClientID == "":
		return k.root + quotasDir + "users/" + quotaName(e.User)
	}
	return k.root + quotasDir + "users/" + quotaName(e.User) + "/clients/" + quotaName(e.ClientID)
}

// parseQuotas is the entity of a key below quotasDir (rest: the key past
// it); false for a malformed one.
func parseQuotas(rest string) (metadata.QuotaEntity, bool) {
	parts := strings.Split(rest, "/")
	var e metadata.QuotaEntity
	var ok bool
	switch {
	case len(parts) == 2 && parts[0] == "ips":
		e.IP, ok = parseQuotaName(parts[1])
	case len(parts) == 2 && parts[0] == "clients":
		e.ClientID, ok = parseQuotaName(parts[1])
	case len(parts) == 2 && parts[0] == "users":
		e.User, ok = parseQuotaName(parts[1])
	case len(parts) == 4 && parts[0] == "users" && parts[2] == "clients":
		var ok2 bool
		e.User, ok = parseQuotaName(parts[1])
		e.ClientID, ok2 = parseQuotaName(parts[3])
		ok = ok && ok2
	}
	return e, ok
}

// SetClientQuotas puts (or, for none, deletes) entity's key. One key per
// entity, so the last writer wins.
func (s *Store) SetClientQuotas(ctx context.Context, entity metadata.QuotaEntity, values map[string]float64) (int64, error) {
	op := fmt.Sprintf("set client quotas of %s", entity)
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if err := entity.Validate(); err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	var value string
	if len(values) > 0 {
		value = mustJSON(quotasRecord{Values: values})
	}
	return s.putOrDelete(ctx, op, s.keys.quotas(entity), value)
}
