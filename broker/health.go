package broker

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
)

// The health endpoints share metrics.listener with /metrics and answer
// without the metrics credentials (metricsAuth lets them through), so
// that container health checks and Kubernetes probes need no secret.
// They reveal nothing but "ok" or the reasons the broker is not ready.
const (
	// HealthzPath answers 200 while the process serves HTTP: the liveness
	// probe. It is up once the broker started and until it stops.
	HealthzPath = "/healthz"
	// ReadyzPath answers 200 when the broker is registered in etcd, every
	// partition replica the metadata assigns to it is open (recovered),
	// and no partition it leads has fewer in-sync replicas than its
	// min.insync.replicas; else 503 with one reason a line.
	ReadyzPath = "/readyz"
)

// maxReasons bounds the lines of a 503 from ReadyzPath; the rest are
// counted.
const maxReasons = 10

// health serves HealthzPath and ReadyzPath for one Run of the broker.
type health struct {
	nodeID int32
	reg    *membership
	cache  *metadata.Cache
	parts  *partition.Manager
}

// mount adds the health endpoints to mux.
func (h *health) mount(mux *http.ServeMux) {
	mux.HandleFunc("GET "+HealthzPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET "+ReadyzPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		reasons := h.notReady()
		if len(reasons) == 0 {
			fmt.Fprintln(w, "ok")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		if len(reasons) > maxReasons {
			reasons = append(reasons[:maxReasons], fmt.Sprintf("and %d more", len(reasons)-maxReasons))
		}
		fmt.Fprintln(w, strings.Join(reasons, "\n"))
	})
}

// notReady lists why the broker is not ready, in a stable order; empty
// when it is.
func (h *health) notReady() []string {
	var out, bad []string
	if h.reg == nil || h.reg.current() == nil {
		out = append(out, "not registered in etcd")
	}
	for _, t := range h.cache.Topics() {
		for idx, st := range t.Partitions {
			if !slices.Contains(st.Replicas, h.nodeID) {
				continue
			}
			p, open := h.parts.Get(t.Name, idx)
			if !open {
				bad = append(bad, fmt.Sprintf("%s-%d: replica not open", t.Name, idx))
				continue
			}
			if !p.IsLeader() {
				continue
			}
			if isr, need, below := underMinISR(p); below {
				bad = append(bad, fmt.Sprintf("%s-%d: led here with %d in-sync replicas, below min.insync.replicas %d", t.Name, idx, isr, need))
			}
		}
	}
	slices.Sort(bad)
	return append(out, bad...)
}

// underMinISR is, of a partition this broker leads, its ISR size, its
// min.insync.replicas and whether the ISR is below that, so acks=all
// produces to it fail: the readiness check and
// strata_under_min_isr_partitions count the same partitions.
func underMinISR(p *partition.Partition) (isr, need int32, below bool) {
	isr, need = int32(len(p.ISR())), p.Config().MinInsyncReplicas
	return isr, need, isr < need
}
