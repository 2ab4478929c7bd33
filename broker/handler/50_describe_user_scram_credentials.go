package handler

import (
	"context"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeUserScramCredentials: v0
//
// Behavior:
//   - Lists each named user's SCRAM mechanisms and iterations (never the
//     salt or keys); no users named (null): every user that has any,
//     sorted by name.
//   - A named user without credentials is RESOURCE_NOT_FOUND; a user named
//     twice is DUPLICATE_RESOURCE for that user, as Kafka answers.
//   - Needs DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED at the
//     top level and for each user named, as in Kafka.
func handleDescribeUserScramCredentials(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !env.allowedCluster(req, aclDescribe) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, strPtr("Authorization failed.")
		for _, u := range r.Users {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode, res.ErrorMessage = u.Name, resp.ErrorCode, resp.ErrorMessage
			resp.Results = append(resp.Results, res)
		}
		return Result{Resp: resp}, nil
	}
	users := env.Cache.ScramUsers()
	var names []string
	if r.Users == nil {
		for u := range users {
			names = append(names, u)
		}
		sort.Strings(names)
	} else {
		for _, u := range r.Users {
			names = append(names, u.Name)
		}
	}
	seen := map[string]int{}
	for _, n := range names {
		seen[n]++
	}
	done := map[string]bool{}
	for _, n := range names {
		if done[n] {
			continue
		}
		done[n] = true
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = n
		creds, ok := users[n]
		switch {
		case seen[n] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = strPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + n)
		case !ok || len(creds) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = strPtr("Attempt to describe a user credential that does not exist: " + n)
		default:
			for _, mech := range slices.Sorted(func(yield func(string) bool) {
				for m := range creds {
					if !yield(m) {
						return
					}
				}
			}) {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = scramCode(mech), creds[mech].Iterations
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return Result{Resp: resp}, nil
}
