package etcdstore

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// benignWarnings are etcd warnings that say nothing useful about the
// embedded, loopback-only server; they are logged at debug level.
var benignWarnings = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"check file permission":                        true,
	"simple token is not cryptographically signed": true,
}

// errNoSpaceText is how etcd logs a write refused under its NOSPACE alarm.
const errNoSpaceText = "etcdserver: no space"

// maxFieldBytes caps a string field of an etcd log entry: etcd logs a
// slow request whole, which for a topic of thousands of partitions is
// megabytes.
const maxFieldBytes = 1024

// newZapLogger returns a zap logger (what etcd's server and client want)
// that forwards entries at or above min to log. While mute is set (it may
// be nil) everything is dropped: the embedded server sets it on Close,
// when etcd reports every closed listener as an error.
func newZapLogger(log *slog.Logger, min zapcore.Level, mute *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{log: log, min: min, mute: mute})
}

// slogCore is a zapcore.Core writing to a slog.Logger. Fields added with
// With are kept and encoded on every entry.
type slogCore struct {
	log    *slog.Logger
	min    zapcore.Level
	mute   *atomic.Bool
	fields []zapcore.Field
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return l >= c.min && (c.mute == nil || !c.mute.Load())
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, min: c.min, mute: c.mute, fields: slices.Concat(c.fields, fields)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slogLevel(e.Level)
	if benignWarnings[e.Message] {
		level = slog.LevelDebug
	}
	ctx := context.Background()
	if !c.log.Enabled(ctx, level) {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	if e.Message == "failed to apply request" && enc.Fields["error"] == errNoSpaceText {
		// Every write refused under the NOSPACE alarm: its caller gets
		// the error, and the space guard has said why once.
		level = slog.LevelDebug
		if !c.log.Enabled(ctx, level) {
			return nil
		}
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields)+1)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		v := enc.Fields[k]
		if str, ok := v.(string); ok && len(str) > maxFieldBytes {
			v = fmt.Sprintf("%s… (%d bytes)", str[:maxFieldBytes], len(str))
		}
		attrs = append(attrs, slog.Any(k, v))
	}
	c.log.LogAttrs(ctx, level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l >= zapcore.WarnLevel:
		return slog.LevelWarn
	case l >= zapcore.InfoLevel:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}
