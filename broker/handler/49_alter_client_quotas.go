package handler

import (
	"context"
	"errors"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// AlterClientQuotas: v0-1
//
// Behavior:
//   - Needs ALTER_CONFIGS on the cluster, else every entry is
//     CLUSTER_AUTHORIZATION_FAILED.
//   - Each entry sets or removes quota values of one entity: user,
//     client-id, both, or ip; a null name is the type's default. Keys:
//     producer_byte_rate, consumer_byte_rate and request_percentage for
//     users and client ids, connection_creation_rate for ips; byte and
//     connection rates are whole numbers; values are positive.
//   - An invalid entity (unknown or repeated type, ip with another type,
//     an ip name that is no address), key or value is INVALID_REQUEST for
//     its entry, which is left unchanged; the others go on.
//   - Removing a value that is not there is no error. An entity left
//     without values is deleted.
//   - validate_only checks without storing.
//   - Each entity is one metadata key, which every broker's cache
//     follows: the new quota applies to the next request.
func handleAlterClientQuotas(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.AlterClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := env.allowedCluster(req, kmsg.ACLOperationAlterConfigs)
	for _, in := range r.Entries {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range in.Entity {
			oc := kmsg.NewAlterClientQuotasResponseEntryEntity()
			oc.Type, oc.Name = c.Type, c.Name
			out.Entity = append(out.Entity, oc)
		}
		if !allowed {
			out.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		} else if err := alterQuotaEntry(ctx, env, in, r.ValidateOnly); err != nil {
			msg := err.Error()
			out.ErrorCode, out.ErrorMessage = quotaErrorCode(err), &msg
		}
		resp.Entries = append(resp.Entries, out)
	}
	return Result{Resp: resp}, nil
}

// errInvalidQuota marks a request error of AlterClientQuotas.
var errInvalidQuota = errors.New("invalid client quota")

// quotaErrorCode is the Kafka code of an alterQuotaEntry error.
func quotaErrorCode(err error) int16 {
	if errors.Is(err, errInvalidQuota) {
		return kerr.InvalidRequest.Code
	}
	return errorCode(err)
}

// alterQuotaEntry validates and applies one entry.
func alterQuotaEntry(ctx context.Context, env *Env, in kmsg.AlterClientQuotasRequestEntry, validateOnly bool) error {
	e, err := quotaEntityOf(in.Entity)
	if err != nil {
		return errors.Join(errInvalidQuota, err)
	}
	next := maps.Clone(env.Cache.ClientQuota(e))
	if next == nil {
		next = map[string]float64{}
	}
	for _, op := range in.Ops {
		if op.Remove {
			if _, ok := quotaKeys[op.Key]; !ok {
				return errors.Join(errInvalidQuota, errors.New("unknown quota key "+op.Key))
			}
			delete(next, op.Key)
			continue
		}
		if err := checkQuotaValue(e, op.Key, op.Value); err != nil {
			return errors.Join(errInvalidQuota, err)
		}
		next[op.Key] = op.Value
	}
	if validateOnly {
		return nil
	}
	rev, err := env.Store.SetClientQuotas(ctx, e, next)
	if errors.Is(err, metadata.ErrInvalidQuotaEntity) {
		return errors.Join(errInvalidQuota, err)
	}
	if err != nil {
		env.Log.Warn("alter client quotas failed", "entity", e, "err", err)
		return err
	}
	return env.Cache.WaitRevision(ctx, rev)
}
