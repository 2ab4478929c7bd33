package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/strata-broker/strata/broker/partition"
)

// partitionCollector reports partition and segment counts at scrape time.
type partitionCollector struct {
	parts             *partition.Manager
	partDesc, segDesc *prometheus.Desc
	sizeDesc, leoDesc *prometheus.Desc
}

func newPartitionCollector(parts *partition.Manager) *partitionCollector {
	return &partitionCollector{
		parts:    parts,
		partDesc: prometheus.NewDesc("strata_partitions", "Partitions served by this broker.", nil, nil),
		segDesc:  prometheus.NewDesc("strata_log_segments", "Local log segments, by topic.", []string{"topic"}, nil),
		sizeDesc: prometheus.NewDesc("strata_log_size_bytes", "Local log bytes, by topic.", []string{"topic"}, nil),
		leoDesc:  prometheus.NewDesc("strata_log_end_offset", "Log end offset, by topic and partition.", []string{"topic", "partition"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.partDesc
	ch <- c.segDesc
	ch <- c.sizeDesc
	ch <- c.leoDesc
}

// Collect implements prometheus.Collector.
func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	all := c.parts.All()
	ch <- prometheus.MustNewConstMetric(c.partDesc, prometheus.GaugeValue, float64(len(all)))
	segs, size := map[string]int{}, map[string]int64{}
	for _, p := range all {
		for _, s := range p.Log().Segments() {
			segs[p.Topic]++
			size[p.Topic] += s.Size
		}
		ch <- prometheus.MustNewConstMetric(c.leoDesc, prometheus.GaugeValue, float64(p.Log().LogEndOffset()), p.Topic, strconv.Itoa(int(p.Index)))
	}
	for t, n := range segs {
		ch <- prometheus.MustNewConstMetric(c.segDesc, prometheus.GaugeValue, float64(n), t)
		ch <- prometheus.MustNewConstMetric(c.sizeDesc, prometheus.GaugeValue, float64(size[t]), t)
	}
}
