package memstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-broker/strata/metadata"
)

// SetScramCredentials replaces (or, for none, removes) user's SCRAM
// credentials, in one revision.
func (s *Store) SetScramCredentials(_ context.Context, user string, creds map[string]metadata.ScramCredential) (int64, error) {
	var invalid error
	if user == "" {
		invalid = errors.New("empty user name")
	}
	return replaceEntry(s, fmt.Sprintf("set SCRAM credentials of user %q", user), invalid, s.b.scram, user, creds,
		func(stored map[string]metadata.ScramCredential) metadata.Change {
			return metadata.Change{Kind: metadata.ChangeScram, User: user, Scram: stored}
		})
}
