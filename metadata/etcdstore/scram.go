package etcdstore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// SetScramCredentials puts (or, for none, deletes) user's SCRAM key. One
// key per user, so the last writer wins.
func (s *Store) SetScramCredentials(ctx context.Context, user string, creds map[string]metadata.ScramCredential) (int64, error) {
	op := fmt.Sprintf("set SCRAM credentials of user %q", user)
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if user == "" {
		return 0, fmt.Errorf("etcdstore: %s: empty user name", op)
	}
	key := s.keys.scram(user)
	if len(creds) == 0 {
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).
			Then(clientv3.OpDelete(key)).
			Commit()
		if err != nil {
			return 0, writeErr(op, err)
		}
		if !resp.Succeeded {
			return s.cache.Revision(), nil
		}
		return s.visible(ctx, op, resp.Header.Revision)
	}
	resp, err := s.cli.Put(ctx, key, mustJSON(scramRecord{Credentials: creds}))
	if err != nil {
		return 0, writeErr(op, err)
	}
	return s.visible(ctx, op, resp.Header.Revision)
}
