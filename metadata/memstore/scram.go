package memstore

import (
	"context"
	"fmt"
	"maps"

	"github.com/strata-broker/strata/metadata"
)

// SetScramCredentials replaces (or, for none, removes) user's SCRAM
// credentials, in one revision.
func (s *Store) SetScramCredentials(_ context.Context, user string, creds map[string]metadata.ScramCredential) (int64, error) {
	op := fmt.Sprintf("set SCRAM credentials of user %q", user)
	if user == "" {
		return 0, fmt.Errorf("memstore: %s: empty user name", op)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	ch := metadata.Change{Kind: metadata.ChangeScram, User: user}
	if len(creds) == 0 {
		delete(b.scram, user)
		ch.Delete = true
	} else {
		ch.Scram = maps.Clone(creds)
		b.scram[user] = ch.Scram
	}
	return b.commit(ch), nil
}
