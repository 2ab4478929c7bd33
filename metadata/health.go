package metadata

import "context"

// EndpointHealth is one endpoint of the store's servers as the store's
// client sees it.
type EndpointHealth struct {
	Endpoint string
	Healthy  bool   // it answered a status request and raised no alarm
	Err      string // why it is not healthy
	Version  string // the server's version
	Leader   bool   // it leads the servers' consensus
	DBSize   int64  // its database's size in bytes
}

// HealthReporter is a store that can report its servers' health (the
// etcd store); an in-memory store has no servers and is not one.
type HealthReporter interface {
	// Health asks each endpoint for its status over the store's own
	// connection settings.
	Health(ctx context.Context) []EndpointHealth
}
