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
// logs, pausing CleanerBackoff when there is nothing to clean. Built by
// New, it follows the broker's configuration: when the cleaner's dynamic
// settings change (log.cleaner.threads, .backoff.ms, .dedupe.buffer.size,
// .io.max.bytes.per.second) it replaces the cleaner, as Kafka's
// LogCleaner reconfigures.
type Service struct {
	set       Settings
	src       Source
	live      *config.Live // nil: the settings never change
	retention *Retention

	mu      sync.Mutex
	cleaner *Cleaner // replaced when the cleaner's settings change
}

// New makes the service of a broker with configuration cfg over the
// partitions of src.
func New(cfg *config.Live, src Source, logger *slog.Logger) *Service {
	set := SettingsFrom(cfg.Load())
	set.Logger = logger
	s := NewService(set, src)
	s.live = cfg
	return s
}

// NewService makes a service with explicit settings, which never change.
// The cleaner's memory is allocated when it first cleans.
func NewService(set Settings, src Source) *Service {
	set = set.withDefaults()
	return &Service{set: set, src: src, retention: NewRetention(set, src), cleaner: NewCleaner(set, src)}
}

// Retention is the service's retention enforcer.
func (s *Service) Retention() *Retention { return s.retention }

// Cleaner is the service's current log cleaner.
func (s *Service) Cleaner() *Cleaner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cleaner
}

// Run runs the retention and cleaner goroutines until ctx is done and
// returns once they all stopped (a cleaning pass in progress is abandoned
// at its next batch; its files are removed or, after a crash, recovered).
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.retentionLoop(ctx) })
	s.runCleaner(ctx)
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

// runCleaner runs the cleaner threads until ctx is done. When the
// cleaner's settings change it stops them (passes in progress are
// abandoned at their next batch, as at a stop) and starts the threads of
// a new cleaner with the new settings; logs the old one skipped after an
// error are tried again.
func (s *Service) runCleaner(ctx context.Context) {
	set := s.set
	for {
		var changed <-chan struct{}
		if s.live != nil {
			changed = s.live.Changed()
		}
		cctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		if set.CleanerEnable {
			c := s.Cleaner()
			for range set.CleanerThreads {
				wg.Go(func() { cleanerLoop(cctx, c, set.CleanerBackoff) })
			}
		}
		next, ok := s.awaitCleanerChange(ctx, changed, set)
		cancel()
		wg.Wait()
		if !ok {
			return
		}
		s.set.Logger.Info("log cleaner reconfigured", "log.cleaner.threads", next.CleanerThreads,
			"log.cleaner.backoff.ms", next.CleanerBackoff.Milliseconds(), "log.cleaner.dedupe.buffer.size", next.DedupeBufferSize,
			"log.cleaner.io.max.bytes.per.second", next.IOMaxBytesPerSecond)
		set = next
		c := NewCleaner(set, s.src)
		s.mu.Lock()
		s.cleaner = c
		s.mu.Unlock()
	}
}

// awaitCleanerChange waits until the broker's configuration changes the
// cleaner's settings from set, and returns the new ones; ok is false when
// ctx ended first. A nil changed never fires.
func (s *Service) awaitCleanerChange(ctx context.Context, changed <-chan struct{}, set Settings) (next Settings, ok bool) {
	for {
		select {
		case <-ctx.Done():
			return set, false
		case <-changed:
		}
		changed = s.live.Changed()
		now := SettingsFrom(s.live.Load())
		next = set
		next.CleanerThreads, next.CleanerBackoff = now.CleanerThreads, now.CleanerBackoff
		next.DedupeBufferSize, next.IOMaxBytesPerSecond = now.DedupeBufferSize, now.IOMaxBytesPerSecond
		if next = next.withDefaults(); next != set {
			return next, true
		}
	}
}

// cleanerLoop cleans logs one after the other while there is work, and
// backs off when there is none or a pass failed.
func cleanerLoop(ctx context.Context, c *Cleaner, backoff time.Duration) {
	for ctx.Err() == nil {
		_, ok, err := c.CleanDirtiest(ctx)
		if ok && err == nil {
			continue
		}
		_ = sleepCtx(ctx, backoff)
	}
}
