package memstore

import (
	"context"
	"fmt"

	"github.com/strata-broker/strata/metadata"
)

// CreateACLs stores the ACLs not stored yet, in one revision.
func (s *Store) CreateACLs(_ context.Context, acls []metadata.ACL) (int64, error) {
	return s.changeACLs("create", acls, false)
}

// DeleteACLs removes the stored ones of acls, in one revision.
func (s *Store) DeleteACLs(_ context.Context, acls []metadata.ACL) (int64, error) {
	return s.changeACLs("delete", acls, true)
}

// changeACLs puts or deletes acls; nothing to change leaves the revision
// where it is.
func (s *Store) changeACLs(verb string, acls []metadata.ACL, del bool) (int64, error) {
	op := fmt.Sprintf("%s %d ACLs", verb, len(acls))
	if !del {
		for _, a := range acls {
			if !a.Concrete() {
				return 0, fmt.Errorf("memstore: %s: %+v: %w", op, a, metadata.ErrInvalidACL)
			}
		}
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	var changes []metadata.Change
	for _, a := range acls {
		if _, ok := b.acls[a]; ok == del {
			if del {
				delete(b.acls, a)
			} else {
				b.acls[a] = struct{}{}
			}
			changes = append(changes, metadata.Change{Kind: metadata.ChangeACL, Delete: del, ACL: a})
		}
	}
	if len(changes) == 0 {
		return b.rev, nil
	}
	return b.commit(changes...), nil
}
