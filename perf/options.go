package perf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Defaults applied to zero-valued options.
const (
	DefaultTopic           = "strata-perf"
	DefaultRecordSize      = 1024
	DefaultRecords         = 100_000
	DefaultPartitions      = 1
	DefaultLinger          = 10 * time.Millisecond
	DefaultDeliveryTimeout = 30 * time.Second
	DefaultCommitEvery     = 10_000
)

// ErrOptions reports invalid options.
var ErrOptions = errors.New("perf: invalid options")

// ErrEmptyTopic is returned by Consume when told to read everything present
// and the topic holds no records.
var ErrEmptyTopic = errors.New("perf: topic is empty")

// ProduceOptions describes a produce run. Zero fields take the defaults
// above. A run stops after Records records or after Duration, whichever
// comes first; when both are zero it writes DefaultRecords records.
type ProduceOptions struct {
	Brokers            []string      // seed brokers, host:port
	Topic              string        // created with Partitions partitions if missing
	RecordSize         int           // value bytes per record (no key)
	Records            int64         // records to write; 0 = bounded by Duration only
	Duration           time.Duration // stop issuing records after this long; 0 = no time bound
	Partitions         int           // partitions of the topic when the tool creates it
	ReplicationFactor  int           // of a created topic; 0 = the broker's default
	Linger             time.Duration // producer linger; 0 = DefaultLinger, negative = none
	Concurrency        int           // independent producer clients; 0 = 1
	Throughput         float64       // target records/s over all clients; 0 = unthrottled
	BatchMaxBytes      int           // max bytes of one record batch; 0 = franz-go default (1 MB)
	MaxBufferedRecords int           // per-client buffer; 0 = franz-go default
	DisableIdempotence bool          // produce without a producer ID (idempotence is on by default)
	DeliveryTimeout    time.Duration // fail a record not acknowledged this long; 0 = default
	// Compression is the producer's codec: "" or none, gzip, snappy, lz4,
	// zstd. With a codec, record values compress about 2:1 each and do
	// not repeat within a batch's compression window; without one they
	// are random.
	Compression string
	// TransactionalID makes each client a transactional producer (client
	// i of several takes the id with "-i" appended) that commits every
	// CommitEvery records it issued, and once more at the end.
	TransactionalID string
	CommitEvery     int64 // records per transaction and client; 0 = DefaultCommitEvery
	// TLS, when set, dials the brokers over TLS with this configuration
	// (an SSL listener); nil dials plaintext.
	TLS *tls.Config
}

// codecs are the producer codecs by ProduceOptions.Compression name.
var codecs = map[string]kgo.CompressionCodec{
	"":       kgo.NoCompression(),
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
}

func knownCodec(name string) bool {
	_, ok := codecs[name]
	return ok
}

// ConsumeOptions describes a consume run, read from the log start of every
// partition without a consumer group. A run stops after Records records or
// after Duration, whichever comes first.
type ConsumeOptions struct {
	Brokers           []string      // seed brokers, host:port
	Topic             string        // must exist
	Records           int64         // records to read; 0 = every record present when the run starts
	Duration          time.Duration // give up after this long; 0 = no time bound
	FetchMaxBytes     int32         // per fetch response; 0 = franz-go default (50 MB)
	FetchMaxPartBytes int32         // per partition in a fetch; 0 = franz-go default (1 MB)
	ReadCommitted     bool          // read_committed isolation: stop at the last stable offset, skip aborted records
	TLS               *tls.Config   // dial the brokers over TLS with this configuration; nil = plaintext
}

// dialOpts are the franz-go options that reach the brokers: the seeds,
// and TLS when tlsCfg is set.
func dialOpts(brokers []string, tlsCfg *tls.Config) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg.Clone()))
	}
	return opts
}

func (o ProduceOptions) withDefaults() (ProduceOptions, error) {
	if len(o.Brokers) == 0 {
		return o, fmt.Errorf("%w: no brokers", ErrOptions)
	}
	if o.Topic == "" {
		o.Topic = DefaultTopic
	}
	if o.RecordSize == 0 {
		o.RecordSize = DefaultRecordSize
	}
	if o.Records == 0 && o.Duration == 0 {
		o.Records = DefaultRecords
	}
	if o.Partitions == 0 {
		o.Partitions = DefaultPartitions
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.DeliveryTimeout == 0 {
		o.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if o.CommitEvery == 0 {
		o.CommitEvery = DefaultCommitEvery
	}
	switch {
	case o.RecordSize < 0:
		return o, fmt.Errorf("%w: record size %d", ErrOptions, o.RecordSize)
	case o.Records < 0 || o.Duration < 0:
		return o, fmt.Errorf("%w: negative bound (records %d, duration %s)", ErrOptions, o.Records, o.Duration)
	case o.Partitions < 0 || o.Partitions > 1<<20:
		return o, fmt.Errorf("%w: partitions %d", ErrOptions, o.Partitions)
	case o.ReplicationFactor < 0 || o.ReplicationFactor > 1<<14:
		return o, fmt.Errorf("%w: replication factor %d", ErrOptions, o.ReplicationFactor)
	case o.Concurrency < 0 || o.Concurrency > 1024:
		return o, fmt.Errorf("%w: concurrency %d", ErrOptions, o.Concurrency)
	case o.Throughput < 0 || o.BatchMaxBytes < 0 || o.MaxBufferedRecords < 0 || o.DeliveryTimeout < 0 || o.CommitEvery < 0:
		return o, fmt.Errorf("%w: negative throughput, batch size, buffer, delivery timeout or commit interval", ErrOptions)
	case o.TransactionalID != "" && o.DisableIdempotence:
		return o, fmt.Errorf("%w: a transactional producer is idempotent", ErrOptions)
	case !knownCodec(o.Compression):
		return o, fmt.Errorf("%w: compression %q (want none, gzip, snappy, lz4 or zstd)", ErrOptions, o.Compression)
	}
	return o, nil
}

func (o ConsumeOptions) withDefaults() (ConsumeOptions, error) {
	if len(o.Brokers) == 0 {
		return o, fmt.Errorf("%w: no brokers", ErrOptions)
	}
	if o.Topic == "" {
		o.Topic = DefaultTopic
	}
	if o.Records < 0 || o.Duration < 0 || o.FetchMaxBytes < 0 || o.FetchMaxPartBytes < 0 {
		return o, fmt.Errorf("%w: negative records, duration or fetch size", ErrOptions)
	}
	return o, nil
}
