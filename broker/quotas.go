package broker

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/quota"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// newQuotas builds the broker's client-quota manager over the metadata
// cache, counting its throttles in reg (strata_quota_throttled_total and
// strata_quota_throttle_time_ms_total, by quota type).
func newQuotas(cfg *config.Broker, cache *metadata.Cache, reg prometheus.Registerer) *quota.Manager {
	throttled := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_quota_throttled_total",
		Help: "Requests (and, for connection, new connections) throttled by a client quota, by quota type: produce, fetch, request, connection."}, []string{"type"})
	throttleMs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_quota_throttle_time_ms_total",
		Help: "Milliseconds of throttle time given to clients over their quotas, by quota type."}, []string{"type"})
	reg.MustRegister(throttled, throttleMs)
	w := quota.Window{Samples: int(cfg.QuotaWindowNum), Size: time.Duration(cfg.QuotaWindowSizeSeconds) * time.Second}
	return quota.New(cache, w, func(k quota.Kind, d time.Duration) {
		throttled.WithLabelValues(k.String()).Inc()
		throttleMs.WithLabelValues(k.String()).Add(float64(d.Milliseconds()))
	})
}

// quotaExempt are the APIs request_percentage does not count: those of
// the connection's set-up, as in Kafka.
var quotaExempt = map[int16]bool{
	kmsg.ApiVersions.Int16():      true,
	kmsg.SASLHandshake.Int16():    true,
	kmsg.SASLAuthenticate.Int16(): true,
}

// throttle records a handled request against its client's quotas (KIP-219):
// a Produce's request bytes against producer_byte_rate, a consumer's
// Fetch response bytes against consumer_byte_rate, and the time the
// handler ran against request_percentage (not for asynchronous handlers,
// whose time is mostly waiting, nor for acks=0). It sets the response's
// throttle_time_ms to the longest throttle and returns it, and whether
// the client throttles itself after the response (KIP-219 versions);
// before them the response is to be held back that long instead.
func throttle(m *quota.Manager, api handler.API, req *handler.Request, res handler.Result, ran time.Duration) (d time.Duration, after bool) {
	if m == nil {
		return 0, true
	}
	user := ""
	if req.Conn != nil {
		user = strings.TrimPrefix(req.Conn.Principal, "User:")
	}
	client := req.Header.ClientID
	now := time.Now()
	switch r := req.Body.(type) {
	case *kmsg.ProduceRequest:
		d = m.Record(quota.Produce, user, client, float64(req.Bytes), now)
	case *kmsg.FetchRequest:
		if r.ReplicaID >= 0 || r.ReplicaState.ID >= 0 {
			return 0, true // followers' replication is not a client's
		}
		if resp, ok := res.Resp.(*kmsg.FetchResponse); ok && m.Enabled(quota.Fetch) {
			d = m.Record(quota.Fetch, user, client, float64(fetchBytes(resp, res)), now)
		}
	}
	if !api.Async && res.Resp != nil && !quotaExempt[req.Header.Key] {
		d = max(d, m.Record(quota.Request, user, client, float64(ran.Nanoseconds())*100/1e9, now))
	}
	if d <= 0 {
		return 0, true
	}
	if t, ok := res.Resp.(kmsg.ThrottleResponse); ok {
		_, after = t.Throttle()
		if s, ok := res.Resp.(kmsg.SetThrottleResponse); ok {
			s.SetThrottle(int32(min(d.Milliseconds(), 1<<31-1)))
		}
	} else {
		after = true // acks=0: nothing to hold back; the connection is muted
	}
	return d, after
}

// fetchBytes is the size of a Fetch response's records: those in the
// response and those written from files.
func fetchBytes(resp *kmsg.FetchResponse, res handler.Result) int64 {
	var n int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n += int64(len(p.RecordBatches))
		}
	}
	for _, r := range res.Regions {
		n += r.Length()
	}
	return n
}

// connMute is a connection's mute (KIP-219): after a throttled response
// the connection reads no request until the throttle time has passed.
type connMute struct {
	mu    sync.Mutex
	until time.Time
}

// extend mutes the connection for d from now, unless it already is for
// longer.
func (m *connMute) extend(d time.Duration) {
	if d <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := time.Now().Add(d); t.After(m.until) {
		m.until = t
	}
}

// wait returns once the connection is not muted, or ctx ended.
func (m *connMute) wait(ctx context.Context) {
	for range 100 { // extend may move until on while waiting
		m.mu.Lock()
		left := time.Until(m.until)
		m.mu.Unlock()
		if left <= 0 {
			return
		}
		t := time.NewTimer(left)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
