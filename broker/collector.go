package broker

import (
	"slices"
	"strconv"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
)

// partitionCollector reports partition and segment counts at scrape time,
// the replicas the metadata assigns here that are not open (a log that
// failed to open, one beyond the partition limit, or one not opened yet),
// and the open-file budget: the partition limit and the sealed segments'
// open files.
type partitionCollector struct {
	parts             *partition.Manager
	cache             *metadata.Cache
	nodeID            int32
	partDesc, segDesc *prometheus.Desc
	sizeDesc, leoDesc *prometheus.Desc
	lsoLag            *prometheus.Desc
	offline           *prometheus.Desc
	limit, files      *prometheus.Desc
	filesMax          *prometheus.Desc
}

func newPartitionCollector(parts *partition.Manager, cache *metadata.Cache, nodeID int32) *partitionCollector {
	return &partitionCollector{
		parts:    parts,
		cache:    cache,
		nodeID:   nodeID,
		offline:  prometheus.NewDesc("strata_offline_replicas", "Partition replicas assigned to this broker that it does not have open (as Kafka's OfflineReplicaCount).", nil, nil),
		partDesc: prometheus.NewDesc("strata_partitions", "Partitions served by this broker.", nil, nil),
		segDesc:  prometheus.NewDesc("strata_log_segments", "Local log segments, by topic.", []string{"topic"}, nil),
		sizeDesc: prometheus.NewDesc("strata_log_size_bytes", "Local log bytes, by topic.", []string{"topic"}, nil),
		leoDesc:  prometheus.NewDesc("strata_log_end_offset", "Log end offset, by topic and partition.", []string{"topic", "partition"}, nil),
		lsoLag: prometheus.NewDesc("strata_last_stable_offset_lag", "High watermark minus last stable offset: the offsets open transactions hold back from read_committed consumers (Kafka's LastStableOffsetLag), by topic and partition.",
			[]string{"topic", "partition"}, nil),
		limit:    prometheus.NewDesc("strata_partitions_max", "Most partition replicas this broker hosts (max.broker.partitions, capped by the open-file limit).", nil, nil),
		files:    prometheus.NewDesc("strata_segment_open_files", "Sealed segments' .log files open now (each partition's active segment holds one more).", nil, nil),
		filesMax: prometheus.NewDesc("strata_segment_open_files_max", "Most sealed segments' .log files kept open (log.segment.open.files.max).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.partDesc
	ch <- c.segDesc
	ch <- c.sizeDesc
	ch <- c.leoDesc
	ch <- c.lsoLag
	ch <- c.offline
	ch <- c.limit
	ch <- c.files
	ch <- c.filesMax
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
		idx := strconv.Itoa(int(p.Index))
		ch <- prometheus.MustNewConstMetric(c.leoDesc, prometheus.GaugeValue, float64(p.Log().LogEndOffset()), p.Topic, idx)
		ch <- prometheus.MustNewConstMetric(c.lsoLag, prometheus.GaugeValue, float64(p.HighWatermark()-p.LastStableOffset()), p.Topic, idx)
	}
	for t, n := range segs {
		ch <- prometheus.MustNewConstMetric(c.segDesc, prometheus.GaugeValue, float64(n), t)
		ch <- prometheus.MustNewConstMetric(c.sizeDesc, prometheus.GaugeValue, float64(size[t]), t)
	}
	offline := 0
	for _, t := range c.cache.Topics() {
		for idx, st := range t.Partitions {
			if _, open := c.parts.Get(t.Name, idx); !open && slices.Contains(st.Replicas, c.nodeID) {
				offline++
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.offline, prometheus.GaugeValue, float64(offline))
	b := c.parts.Budget()
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(b.MaxPartitions))
	ch <- prometheus.MustNewConstMetric(c.files, prometheus.GaugeValue, float64(c.parts.OpenSegmentFiles()))
	ch <- prometheus.MustNewConstMetric(c.filesMax, prometheus.GaugeValue, float64(b.SegmentFiles))
}

// remoteCollector reports the remote log manager's per-partition state at
// scrape time (remote.Manager.StatusOf: the backlog is measured then) and
// the object store failures counted by the tiering store wrapper.
type remoteCollector struct {
	t       *tiering
	parts   *partition.Manager
	backlog *prometheus.Desc
	blBytes *prometheus.Desc
	size    *prometheus.Desc
	copies  *prometheus.Desc
	copyErr *prometheus.Desc
	delErr  *prometheus.Desc
}

func newRemoteCollector(t *tiering, parts *partition.Manager) *remoteCollector {
	tp := []string{"topic", "partition"}
	return &remoteCollector{
		t: t, parts: parts,
		backlog: prometheus.NewDesc("strata_remote_copy_backlog_segments", "Sealed, committed local segments not yet copied to the remote tier (leader).", tp, nil),
		blBytes: prometheus.NewDesc("strata_remote_copy_backlog_bytes", "Bytes of the segments waiting to be copied to the remote tier (leader).", tp, nil),
		size:    prometheus.NewDesc("strata_remote_log_size_bytes", "Bytes of the finished remote copies.", tp, nil),
		copies:  prometheus.NewDesc("strata_remote_log_segments", "Finished remote segment copies.", tp, nil),
		copyErr: prometheus.NewDesc("strata_remote_copy_errors_total", "Failed uploads to the remote object store.", nil, nil),
		delErr:  prometheus.NewDesc("strata_remote_delete_errors_total", "Failed deletes in the remote object store.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *remoteCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.backlog, c.blBytes, c.size, c.copies, c.copyErr, c.delErr} {
		ch <- d
	}
}

// Collect implements prometheus.Collector; it reports nothing while
// tiering is off.
func (c *remoteCollector) Collect(ch chan<- prometheus.Metric) {
	if c.t == nil || c.t.m == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.copyErr, prometheus.CounterValue, float64(c.t.store.putErrors.Load()))
	ch <- prometheus.MustNewConstMetric(c.delErr, prometheus.CounterValue, float64(c.t.store.deleteErrors.Load()))
	for _, p := range c.parts.All() {
		pi := p.RemoteInfo()
		if pi.Config == nil || !pi.Config.RemoteStorageEnable {
			continue
		}
		st := c.t.m.StatusOf(pi)
		labels := []string{pi.Topic, strconv.Itoa(int(pi.Partition))}
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(st.CopyBacklog), labels...)
		ch <- prometheus.MustNewConstMetric(c.blBytes, prometheus.GaugeValue, float64(st.CopyBacklogBytes), labels...)
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(st.RemoteBytes), labels...)
		ch <- prometheus.MustNewConstMetric(c.copies, prometheus.GaugeValue, float64(st.RemoteCopies), labels...)
	}
}

// metadataSpace is what metadataSpaceCollector reports: the embedded
// etcd space guard's last measurement (etcdstore.SpaceStats).
type metadataSpace struct {
	backend, inUse, quota, avail, reserve int64
	noSpace                               bool
}

// metadataSpaceCollector reports the embedded etcd's database against
// its quota, its disk against the reserve, and whether etcd refuses
// writes that would grow it.
type metadataSpaceCollector struct {
	stats                                 func() metadataSpace
	backend, inUse, quota, avail, reserve *prometheus.Desc
	noSpace                               *prometheus.Desc
}

func newMetadataSpaceCollector(stats func() metadataSpace) *metadataSpaceCollector {
	return &metadataSpaceCollector{
		stats:   stats,
		backend: prometheus.NewDesc("strata_metadata_backend_bytes", "Size of the embedded etcd's database file (etcd_mvcc_db_total_size_in_bytes).", nil, nil),
		inUse:   prometheus.NewDesc("strata_metadata_backend_in_use_bytes", "Part of the embedded etcd's database holding live data; defragmentation reclaims the rest (etcd_mvcc_db_total_size_in_use_in_bytes).", nil, nil),
		quota:   prometheus.NewDesc("strata_metadata_quota_bytes", "Database size past which the embedded etcd refuses writes that would grow it (metadata.etcd.quota.backend.bytes, etcd_server_quota_backend_bytes).", nil, nil),
		avail:   prometheus.NewDesc("strata_metadata_disk_available_bytes", "Free space of the embedded etcd's disk (-1: not measured).", nil, nil),
		reserve: prometheus.NewDesc("strata_metadata_disk_reserve_bytes", "Free space kept for the embedded etcd on its disk (metadata.etcd.reserve.bytes): below it, metadata writes and appends to logs on that disk are refused.", nil, nil),
		noSpace: prometheus.NewDesc("strata_metadata_no_space", "1 while the embedded etcd refuses writes that would grow it (its NOSPACE alarm: the quota or the disk reserve was reached).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *metadataSpaceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.backend, c.inUse, c.quota, c.avail, c.reserve, c.noSpace} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *metadataSpaceCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	noSpace := 0.0
	if st.noSpace {
		noSpace = 1
	}
	for d, v := range map[*prometheus.Desc]float64{
		c.backend: float64(st.backend), c.inUse: float64(st.inUse), c.quota: float64(st.quota),
		c.avail: float64(st.avail), c.reserve: float64(st.reserve), c.noSpace: noSpace,
	} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
}

// replicationCollector reports, at scrape time, the partitions this
// broker leads whose ISR lacks some of their replicas (Kafka's
// UnderReplicatedPartitions) and the partitions of the whole cluster
// that have no leader as this broker's metadata shows them (Kafka's
// OfflinePartitionsCount, which only the controller reports; every
// Strata broker reports it, so take the max over brokers).
type replicationCollector struct {
	parts          *partition.Manager
	cache          *metadata.Cache
	under, offline *prometheus.Desc
	underMinISR    *prometheus.Desc
}

func newReplicationCollector(parts *partition.Manager, cache *metadata.Cache) *replicationCollector {
	return &replicationCollector{
		parts: parts, cache: cache,
		under:       prometheus.NewDesc("strata_under_replicated_partitions", "Partitions this broker leads whose ISR is smaller than their replica set (Kafka's UnderReplicatedPartitions).", nil, nil),
		underMinISR: prometheus.NewDesc("strata_under_min_isr_partitions", "Partitions this broker leads whose ISR is smaller than min.insync.replicas: acks=all produces fail (Kafka's UnderMinIsrPartitionCount).", nil, nil),
		offline:     prometheus.NewDesc("strata_offline_partitions", "Partitions of the cluster without a leader, as this broker's metadata shows them (Kafka's OfflinePartitionsCount).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *replicationCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.under
	ch <- c.underMinISR
	ch <- c.offline
}

// Collect implements prometheus.Collector.
func (c *replicationCollector) Collect(ch chan<- prometheus.Metric) {
	under, underMin, offline := 0, 0, 0
	for _, t := range c.cache.Topics() {
		for idx, st := range t.Partitions {
			if st.Leader == metadata.NoLeader {
				offline++
				continue
			}
			p, open := c.parts.Get(t.Name, idx)
			if !open || !p.IsLeader() {
				continue
			}
			isr, _, belowMin := underMinISR(p)
			if int(isr) < len(st.Replicas) {
				under++
			}
			if belowMin {
				underMin++
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.under, prometheus.GaugeValue, float64(under))
	ch <- prometheus.MustNewConstMetric(c.underMinISR, prometheus.GaugeValue, float64(underMin))
	ch <- prometheus.MustNewConstMetric(c.offline, prometheus.GaugeValue, float64(offline))
}

// logDirCollector reports the size and free space of the filesystems of
// the log directories at scrape time (Kafka's log dir TotalBytes and
// UsableBytes), by directory.
type logDirCollector struct {
	dirs               []string
	total, used, avail *prometheus.Desc
}

func newLogDirCollector(dirs []string) *logDirCollector {
	d := []string{"dir"}
	return &logDirCollector{
		dirs:  dirs,
		total: prometheus.NewDesc("strata_log_dir_total_bytes", "Size of the filesystem holding the log directory.", d, nil),
		used:  prometheus.NewDesc("strata_log_dir_used_bytes", "Bytes in use on the filesystem holding the log directory (all files, not only logs).", d, nil),
		avail: prometheus.NewDesc("strata_log_dir_available_bytes", "Bytes free for this broker on the filesystem holding the log directory.", d, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *logDirCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.total
	ch <- c.used
	ch <- c.avail
}

// Collect implements prometheus.Collector; a directory that cannot be
// measured is left out.
func (c *logDirCollector) Collect(ch chan<- prometheus.Metric) {
	for _, dir := range c.dirs {
		var st syscall.Statfs_t
		if syscall.Statfs(dir, &st) != nil {
			continue
		}
		bs := uint64(st.Bsize)
		total, free, avail := st.Blocks*bs, st.Bfree*bs, st.Bavail*bs
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(total), dir)
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(total-free), dir)
		ch <- prometheus.MustNewConstMetric(c.avail, prometheus.GaugeValue, float64(avail), dir)
	}
}
