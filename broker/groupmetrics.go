package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/partition"
)

// groupCollector reports, at scrape time, the committed offsets of the
// groups this broker coordinates and their lag: the partition's high
// watermark minus the committed offset, where this broker hosts a
// replica of the partition (a follower's high watermark may trail the
// leader's a little). Each group is reported by its coordinator only,
// so sums over brokers count each once. One series per group and
// partition: as many as Burrow or kafka-lag-exporter would export.
type groupCollector struct {
	groups         *group.Coordinator
	parts          *partition.Manager
	committed, lag *prometheus.Desc
	groupCount     *prometheus.Desc
}

func newGroupCollector(groups *group.Coordinator, parts *partition.Manager) *groupCollector {
	gtp := []string{"group", "topic", "partition"}
	return &groupCollector{
		groups: groups, parts: parts,
		committed:  prometheus.NewDesc("strata_consumer_group_committed_offset", "A group's committed offset, by group, topic and partition (coordinator).", gtp, nil),
		lag:        prometheus.NewDesc("strata_consumer_group_lag", "High watermark minus a group's committed offset, by group, topic and partition (coordinator, where it hosts a replica of the partition).", gtp, nil),
		groupCount: prometheus.NewDesc("strata_consumer_groups", "Groups this broker coordinates, by state.", []string{"state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *groupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.committed
	ch <- c.lag
	ch <- c.groupCount
}

// Collect implements prometheus.Collector. While some partition of
// __consumer_offsets is loading, its groups are left out.
func (c *groupCollector) Collect(ch chan<- prometheus.Metric) {
	listed, committed := c.groups.AllCommitted()
	states := map[string]int{}
	for _, l := range listed {
		states[l.State]++
	}
	for _, o := range committed {
		labels := []string{o.Group, o.Topic, strconv.Itoa(int(o.Partition))}
		ch <- prometheus.MustNewConstMetric(c.committed, prometheus.GaugeValue, float64(o.Offset), labels...)
		if p, ok := c.parts.Get(o.Topic, o.Partition); ok && o.Offset >= 0 {
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(max(0, p.HighWatermark()-o.Offset)), labels...)
		}
	}
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(c.groupCount, prometheus.GaugeValue, float64(n), st)
	}
}
