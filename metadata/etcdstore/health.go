package etcdstore

import (
	"context"
	"strings"
	"sync"
)

// EndpointHealth is one etcd endpoint as the store's client sees it.
type EndpointHealth struct {
	Endpoint string
	Healthy  bool   // it answered a status request and raised no alarm
	Err      string // why it is not healthy
	Version  string // etcd's server version
	Leader   bool   // it is the etcd cluster's raft leader
	DBSize   int64  // its backend database's size in bytes
}

// Health asks each of the client's endpoints for its status, in
// parallel, over the client's own connection settings (TLS, client
// certificate, authentication), so an endpoint shows as healthy exactly
// when the broker itself can use it.
func (s *Store) Health(ctx context.Context) []EndpointHealth {
	eps := s.cli.Endpoints()
	out := make([]EndpointHealth, len(eps))
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
