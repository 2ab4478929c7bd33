package compaction

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-broker/strata/config"
)

// Settings are the broker settings compaction follows.
type Settings struct {
	// RetentionCheckInterval: log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// CleanerEnable and CleanerThreads: log.cleaner.enable and
	// log.cleaner.threads (0 threads: no cleaning).
	CleanerEnable  bool
	CleanerThreads int
	// CleanerBackoff: log.cleaner.backoff.ms, the pause of a cleaner
	// thread that found nothing to clean.
	CleanerBackoff time.Duration
	// DedupeBufferSize: log.cleaner.dedupe.buffer.size, the memory of all
	// cleaner threads' offset maps and read buffers together.
	DedupeBufferSize int64
	// IOMaxBytesPerSecond: log.cleaner.io.max.bytes.per.second, over all
	// cleaner threads.
	IOMaxBytesPerSecond float64
	// Logger: nil means slog.Default().
	Logger *slog.Logger
}

// SettingsFrom takes the settings from the broker configuration.
func SettingsFrom(b *config.Broker) Settings {
	return Settings{
		RetentionCheckInterval: time.Duration(b.LogRetentionCheckIntervalMs) * time.Millisecond,
		CleanerEnable:          b.LogCleanerEnable,
		CleanerThreads:         int(b.LogCleanerThreads),
		CleanerBackoff:         time.Duration(b.LogCleanerBackoffMs) * time.Millisecond,
		DedupeBufferSize:       b.LogCleanerDedupeBufferSize,
		IOMaxBytesPerSecond:    b.LogCleanerIOMaxBytesPerSecond,
	}
}

// withDefaults fills the unset fields.
func (s Settings) withDefaults() Settings {
	if s.RetentionCheckInterval <= 0 {
		s.RetentionCheckInterval = 5 * time.Minute
	}
	if s.CleanerBackoff <= 0 {
		s.CleanerBackoff = 15 * time.Second
	}
	if s.DedupeBufferSize <= 0 {
		s.DedupeBufferSize = 128 << 20
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	return s
}

// nowMs is the time retention and cleaning decisions compare record
// timestamps with.
func nowMs() int64 { return time.Now().UnixMilli() }

// Service runs retention and the log cleaner in the background for a
// broker: one goroutine runs a retention pass every
// RetentionCheckInterval, and CleanerThreads goroutines clean the dirtiest
// logs, pausing CleanerBackoff when there is nothing to clean.
type Service struct {
	set       Settings
	retention *Retention
	cleaner   *Cleaner
}

// New makes the service of a broker with configuration cfg over the
// partitions of src.
func New(cfg *config.Broker, src Source, logger *slog.Logger) *Service {
	set := SettingsFrom(cfg)
	set.Logger = logger
	return NewService(set, src)
}

// NewService makes a service with explicit settings. The cleaner's memory
// is allocated when it first cleans.
func NewService(set Settings, src Source) *Service {
	set = set.withDefaults()
	return &Service{set: set, retention: NewRetention(set, src), cleaner: NewCleaner(set, src)}
}

// Retention is the service's retention enforcer.
func (s *Service) Retention() *Retention { return s.retention }

// Cleaner is the service's log cleaner.
func (s *Service) Cleaner() *Cleaner { return s.cleaner }

// Run runs the retention and cleaner goroutines until ctx is done and
// returns once they all stopped (a cleaning pass in progress is abandoned
// at its next batch; its files are removed or, after a crash, recovered).
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.retentionLoop(ctx) })
	if s.set.CleanerEnable {
		for range s.set.CleanerThreads {
			wg.Go(func() { s.cleanerLoop(ctx) })
		}
	}
	wg.Wait()
}

// retentionLoop runs a retention pass every RetentionCheckInterval.
func (s *Service) retentionLoop(ctx context.Context) {
	t := time.NewTicker(s.set.RetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.retention.RunOnce(); err != nil {
			s.set.Logger.Error("retention pass", "err", err)
		}
	}
}

// cleanerLoop cleans logs one after the other while there is work, and
// backs off when there is none or a pass failed.
func (s *Service) cleanerLoop(ctx context.Context) {
	for ctx.Err() == nil {
		_, ok, err := s.cleaner.CleanDirtiest(ctx)
		if ok && err == nil {
			continue
		}
		_ = sleepCtx(ctx, s.set.CleanerBackoff)
	}
}
