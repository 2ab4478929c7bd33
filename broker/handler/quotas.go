package handler

import (
	"fmt"
	"math"
	"net/netip"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/quota"
	"github.com/strata-broker/strata/metadata"
)

// The entity types of the client-quota APIs.
const (
	quotaUser   = "user"
	quotaClient = "client-id"
	quotaIP     = "ip"
)

// quotaKeyDef says of one quota key which entities take it and whether
// its value must be a whole number (Kafka's LONG and INT quota configs).
type quotaKeyDef struct {
	ip    bool // taken by ip entities, and only by them
	whole bool
}

// quotaKeys are the keys AlterClientQuotas accepts.
var quotaKeys = map[string]quotaKeyDef{
	quota.Produce.Key():            {whole: true},
	quota.Fetch.Key():              {whole: true},
	quota.Request.Key():            {},
	quota.ConnectionCreation.Key(): {ip: true, whole: true},
}

// quotaEntityOf turns an AlterClientQuotas entry's entity components
// (type, name; a nil name is the default) into a metadata entity, or says
// why it is not one.
func quotaEntityOf(components []kmsg.AlterClientQuotasRequestEntryEntity) (metadata.QuotaEntity, error) {
	var e metadata.QuotaEntity
	for _, c := range components {
		typ := c.Type
		name := metadata.QuotaDefault
		if c.Name != nil {
			name = *c.Name
			if name == "" || name == metadata.QuotaDefault {
				return e, fmt.Errorf("invalid %s name %q", typ, name)
			}
		}
		var field *string
		switch typ {
		case quotaUser:
			field = &e.User
		case quotaClient:
			field = &e.ClientID
		case quotaIP:
			field = &e.IP
			if name != metadata.QuotaDefault {
				if _, err := netip.ParseAddr(name); err != nil {
					return e, fmt.Errorf("%s is not a valid IP address", name)
				}
			}
		default:
			return e, fmt.Errorf("unknown entity type %q", typ)
		}
		if *field != "" {
			return e, fmt.Errorf("duplicate entity type %q", typ)
		}
		*field = name
	}
	if err := e.Validate(); err != nil {
		return e, fmt.Errorf("invalid entity: user, client-id, user and client-id, or ip")
	}
	return e, nil
}

// checkQuotaValue validates a value to set for key on entity e.
func checkQuotaValue(e metadata.QuotaEntity, key string, v float64) error {
	def, ok := quotaKeys[key]
	if !ok || def.ip != (e.IP != "") {
		return fmt.Errorf("invalid quota key %q for entity %s", key, e)
	}
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || v <= 0:
		return fmt.Errorf("quota %s must be positive, not %v", key, v)
	case def.whole && (v != math.Trunc(v) || v > math.MaxInt64):
		return fmt.Errorf("quota %s must be a whole number, not %v", key, v)
	}
	return nil
}

// quotaComponents is e in DescribeClientQuotas' form: its types in
// Kafka's order (user, client-id, ip), a nil name for a default.
func quotaComponents(e metadata.QuotaEntity) []kmsg.DescribeClientQuotasResponseEntryEntity {
	var out []kmsg.DescribeClientQuotasResponseEntryEntity
	add := func(typ, name string) {
		if name == "" {
			return
		}
		c := kmsg.NewDescribeClientQuotasResponseEntryEntity()
		c.Type = typ
		if name != metadata.QuotaDefault {
			c.Name = kmsg.StringPtr(name)
		}
		out = append(out, c)
	}
	add(quotaUser, e.User)
	add(quotaClient, e.ClientID)
	add(quotaIP, e.IP)
	return out
}
