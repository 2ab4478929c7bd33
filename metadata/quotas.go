package metadata

import (
	"errors"
	"fmt"
	"maps"
)

// ErrInvalidQuotaEntity: a client-quota entity is not one Kafka allows
// (user, client-id, user and client-id together, or ip alone; each name
// non-empty).
var ErrInvalidQuotaEntity = errors.New("metadata: invalid client quota entity")

// QuotaDefault is the name of a default entity (Kafka's <default>, a null
// name in its admin APIs): its quota applies to every user, client id or
// ip that has none of its own. A real user, client id or ip of that name
// cannot be given a quota of its own, as in Kafka's stored layout.
const QuotaDefault = "<default>"

// QuotaEntity names what a client quota applies to: a user, a client id,
// a user's client id, or an ip address; an empty field is absent, and
// QuotaDefault stands for the default entity of that type. Comparable:
// a map key.
type QuotaEntity struct {
	User     string
	ClientID string
	IP       string
}

// Validate reports ErrInvalidQuotaEntity unless e is one of Kafka's
// entity combinations: user, client-id, user with client-id, or ip.
func (e QuotaEntity) Validate() error {
	switch {
	case e.IP != "" && (e.User != "" || e.ClientID != ""):
		return fmt.Errorf("%w: ip %q together with a user or client id", ErrInvalidQuotaEntity, e.IP)
	case e == QuotaEntity{}:
		return fmt.Errorf("%w: no entity", ErrInvalidQuotaEntity)
	}
	return nil
}

// String is the entity as Kafka's tools print it ("user=alice,client-id=app").
func (e QuotaEntity) String() string {
	s := ""
	add := func(k, v string) {
		if v == "" {
			return
		}
		if s != "" {
			s += ","
		}
		s += k + "=" + v
	}
	add("user", e.User)
	add("client-id", e.ClientID)
	add("ip", e.IP)
	return s
}

// ClientQuota returns the quota values of one entity, by key
// ("producer_byte_rate", ...); nil when it has none. The map is shared: do
// not modify it.
func (c *Cache) ClientQuota(e QuotaEntity) map[string]float64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.quotas[e]
}

// ClientQuotas returns the quota values of every entity that has some. The
// inner maps are shared: do not modify them.
func (c *Cache) ClientQuotas() map[QuotaEntity]map[string]float64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.quotas)
}

// QuotaRevision counts the changes of client quotas the cache applied:
// a reader that resolved quotas at one value may keep its resolution
// until it moves.
func (c *Cache) QuotaRevision() uint64 { return c.quotaGen.Load() }
