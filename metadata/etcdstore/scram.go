package etcdstore

import (
	"context"
	"fmt"

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
	var value string
	if len(creds) > 0 {
		value = mustJSON(scramRecord{Credentials: creds})
	}
	return s.putOrDelete(ctx, op, s.keys.scram(user), value)
}
