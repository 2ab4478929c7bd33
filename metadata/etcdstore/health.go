package etcdstore

import (
	"context"
	"strings"
	"sync"

	"github.com/strata-broker/strata/metadata"
)

var _ metadata.HealthReporter = (*Store)(nil)

// Health asks each of the client's endpoints for its status, in
// parallel, over the client's own connection settings (TLS, client
// certificate, authentication), so an endpoint shows as healthy exactly
// when the broker itself can use it.
func (s *Store) Health(ctx context.Context) []metadata.EndpointHealth {
	eps := s.cli.Endpoints()
	out := make([]metadata.EndpointHealth, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		out[i].Endpoint = ep
		wg.Go(func() {
			st, err := s.cli.Status(ctx, ep)
			switch {
			case err != nil:
				out[i].Err = err.Error()
			case len(st.Errors) > 0:
				out[i].Err = strings.Join(st.Errors, "; ")
			default:
				out[i].Healthy = true
			}
			if st != nil {
				out[i].Version, out[i].DBSize = st.Version, st.DbSize
				out[i].Leader = st.Header != nil && st.Leader == st.Header.MemberId
			}
		})
	}
	wg.Wait()
	return out
}
