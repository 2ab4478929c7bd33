package handler

import (
	"context"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/sasl"
	"github.com/strata-broker/strata/metadata"
)

// AlterUserScramCredentials: v0
//
// Behavior:
//   - Deletes and upserts SCRAM credentials; an upsertion carries the salt
//     and salted password (never the password), from which StoredKey and
//     ServerKey are derived and stored with the salt and iterations.
//   - Per user, as Kafka checks: an empty name or iterations outside
//     4096..16384 is UNACCEPTABLE_CREDENTIAL, an unknown mechanism
//     UNSUPPORTED_SASL_MECHANISM, deleting a credential that does not exist
//     RESOURCE_NOT_FOUND, and a user altered more than once in the request
//     DUPLICATE_RESOURCE; such a user is left unchanged.
//   - Each user's credentials are one metadata key; the brokers' caches
//     follow it, so every broker authenticates with the new credential.
//   - Needs ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED for each
//     user, as in Kafka.
func handleAlterUserScramCredentials(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var order []string
	byUser := map[string][]scramAlteration{}
	add := func(user string, a scramAlteration) {
		if _, ok := byUser[user]; !ok {
			order = append(order, user)
		}
		byUser[user] = append(byUser[user], a)
	}
	for _, d := range r.Deletions {
		add(d.Name, scramAlteration{del: true, mech: d.Mechanism})
	}
	for _, u := range r.Upsertions {
		add(u.Name, scramAlteration{mech: u.Mechanism, iter: u.Iterations, salt: u.Salt, salted: u.SaltedPassword})
	}
	users := env.Cache.ScramUsers()
	denied := !env.allowedCluster(req, aclAlter)
	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		if denied {
			res.ErrorCode, res.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, strPtr("Authorization failed.")
		} else if code, msg := alterScram(ctx, env, user, byUser[user], users[user]); code != 0 {
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		resp.Results = append(resp.Results, res)
	}
	return Result{Resp: resp}, nil
}

// scramAlteration is one deletion or upsertion of a request.
type scramAlteration struct {
	del          bool
	mech         int8
	iter         int32
	salt, salted []byte
}

// alterScram applies one user's alterations and returns the error code
// and message for the user (0: done).
func alterScram(ctx context.Context, env *Env, user string, alts []scramAlteration, have map[string]metadata.ScramCredential) (int16, string) {
	if user == "" {
		return kerr.UnacceptableCredential.Code, "Username must not be empty"
	}
	if len(alts) > 1 {
		return kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"
	}
	a := alts[0]
	mech, ok := scramMechanisms[a.mech]
	if !ok {
		return kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"
	}
	next := maps.Clone(have)
	if next == nil {
		next = map[string]metadata.ScramCredential{}
	}
	if a.del {
		if _, ok := have[mech]; !ok {
			return kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"
		}
		delete(next, mech)
	} else {
		switch {
		case a.iter < scramMinIterations:
			return kerr.UnacceptableCredential.Code, "Too few iterations"
		case a.iter > scramMaxIterations:
			return kerr.UnacceptableCredential.Code, "Too many iterations"
		}
		cred, err := sasl.ScramCredentialFromSaltedPassword(mech, a.salt, a.salted, int(a.iter))
		if err != nil {
			return kerr.UnacceptableCredential.Code, err.Error()
		}
		next[mech] = metadata.ScramCredential{Salt: cred.Salt, Iterations: a.iter, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}
	}
	rev, err := env.Store.SetScramCredentials(ctx, user, next)
	if err != nil {
		env.Log.Warn("alter SCRAM credentials failed", "user", user, "err", err)
		return errorCode(err), err.Error()
	}
	if err := env.Cache.WaitRevision(ctx, rev); err != nil {
		return kerr.RequestTimedOut.Code, err.Error()
	}
	return 0, ""
}
