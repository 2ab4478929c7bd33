package broker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-broker/strata/broker/coordshard"
	"github.com/strata-broker/strata/broker/txn"
)

// coordinatorCollector reports, at scrape time, the transaction
// coordinator's transactions (Kafka has no ongoing count; the completions
// are counted as the coordinator logs them) and how long the group and
// transaction coordinators took to load their partitions (Kafka's
// partition-load-time-max and -avg of group-coordinator-metrics and
// transaction-coordinator-metrics).
type coordinatorCollector struct {
	txn   func() txn.Stats
	group func() coordshard.LoadStats

	ongoing, committed, aborted *prometheus.Desc
	loadTime, loadTimeMax       *prometheus.Desc
}

func newCoordinatorCollector(txnStats func() txn.Stats, groupLoads func() coordshard.LoadStats) *coordinatorCollector {
	kind := []string{"coordinator"}
	return &coordinatorCollector{
		txn: txnStats, group: groupLoads,
		ongoing:     prometheus.NewDesc("strata_transactions_ongoing", "Transactions open or ending on the partitions this broker coordinates.", nil, nil),
		committed:   prometheus.NewDesc("strata_transactions_committed_total", "Transactions this broker's coordinator completed with a commit.", nil, nil),
		aborted:     prometheus.NewDesc("strata_transactions_aborted_total", "Transactions this broker's coordinator completed with an abort (timeouts and fences included).", nil, nil),
		loadTime:    prometheus.NewDesc("strata_coordinator_partition_load_time_seconds", "Time to load a led __consumer_offsets or __transaction_state partition, from election to serving (Kafka's partition-load-time-avg), by coordinator.", kind, nil),
		loadTimeMax: prometheus.NewDesc("strata_coordinator_partition_load_time_max_seconds", "Longest partition load of the coordinator (Kafka's partition-load-time-max), by coordinator.", kind, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *coordinatorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.ongoing, c.committed, c.aborted, c.loadTime, c.loadTimeMax} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *coordinatorCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.txn()
	ch <- prometheus.MustNewConstMetric(c.ongoing, prometheus.GaugeValue, float64(s.Ongoing))
	ch <- prometheus.MustNewConstMetric(c.committed, prometheus.CounterValue, float64(s.Committed))
	ch <- prometheus.MustNewConstMetric(c.aborted, prometheus.CounterValue, float64(s.Aborted))
	for kind, l := range map[string]coordshard.LoadStats{"transaction": s.Loads, "group": c.group()} {
		ch <- prometheus.MustNewConstSummary(c.loadTime, uint64(l.Count), l.Total.Seconds(), nil, kind)
		ch <- prometheus.MustNewConstMetric(c.loadTimeMax, prometheus.GaugeValue, l.Max.Seconds(), kind)
	}
}
