package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/tier/record"
)

// readChunk is how many bytes one read of a partition asks for.
const readChunk = 1 << 20

// message is one record as the message browser shows it.
type message struct {
	Partition int32
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []record.Header
	NullKey   bool
	NullValue bool
}

// errPastEnd is a seek beyond a partition's high watermark.
var errPastEnd = errors.New("offset past the end of the partition")

// readBatches returns the record batches of topic/partition from offset
// on, about maxBytes of them, and the high watermark: from this broker's
// log (hot or cold) when it leads the partition, else from its leader's
// Fetch over the peer client.
func readBatches(ctx context.Context, be *backend, topic string, part int32, offset int64, maxBytes int) ([]record.Batch, int64, error) {
	st, ok := be.env.Cache.Partition(topic, part)
	if !ok {
		return nil, -1, fmt.Errorf("%s-%d: no such partition", topic, part)
	}
	if st.Leader < 0 {
		return nil, -1, fmt.Errorf("%s-%d: offline (no leader)", topic, part)
	}
	if st.Leader != be.self() || be.env.Partitions == nil {
		return fetchRemote(ctx, be, st.Leader, topic, part, offset, maxBytes)
	}
	p, ok := be.env.Partitions.Get(topic, part)
	if !ok {
		return nil, -1, fmt.Errorf("%s-%d: not open on this broker", topic, part)
	}
	hw := p.HighWatermark()
	if offset > hw {
		return nil, hw, fmt.Errorf("%s-%d: offset %d, high watermark %d: %w", topic, part, offset, hw, errPastEnd)
	}
	if offset < p.LogStartOffset() {
		offset = p.LogStartOffset()
	}
	var buf []byte
	loc, err := p.Locate(ctx, offset)
	if err != nil {
		return nil, hw, err
	}
	cold, err := p.ReadCold(ctx, loc, offset, maxBytes)
	switch {
	case err == nil:
		buf, err = cold.Bytes()
		cold.Release()
	case errors.Is(err, partition.ErrOffsetOutOfRange) && offset >= p.LocalLogStartOffset():
		sl, rerr := p.Read(offset, maxBytes)
		err = rerr
		if err == nil && sl.Len > 0 {
			buf = make([]byte, sl.Len)
			_, err = sl.File.ReadAt(buf, sl.Pos)
			if errors.Is(err, io.EOF) {
				err = nil
			}
		}
		sl.Release()
	}
	if err != nil {
		return nil, hw, fmt.Errorf("%s-%d: read at %d: %w", topic, part, offset, err)
	}
	batches, err := record.Split(buf)
	if err != nil {
		return nil, hw, fmt.Errorf("%s-%d: read at %d: %w", topic, part, offset, err)
	}
	return batches, hw, nil
}

// fetchRemote reads from the partition's leader with a Fetch.
func fetchRemote(ctx context.Context, be *backend, leader int32, topic string, part int32, offset int64, maxBytes int) ([]record.Batch, int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = -1, int32(maxBytes), 0, 0
	req.SessionEpoch = -1
	t, _ := be.env.Cache.Topic(topic)
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, t.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = part, offset, int32(maxBytes), -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.SetVersion(12) // topics by name
	res, err := be.on(ctx, leader, req)
	if err != nil {
		return nil, -1, err
	}
	fr := res.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return nil, -1, fmt.Errorf("%s-%d: broker %d answered no partition", topic, part, leader)
	}
	p := fr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return nil, p.HighWatermark, fmt.Errorf("%s-%d: offset %d: %w", topic, part, offset, errPastEnd)
		}
		return nil, p.HighWatermark, fmt.Errorf("%s-%d: fetch from broker %d: %w", topic, part, leader, err)
	}
	n, _ := record.ValidPrefix(p.RecordBatches)
	batches, err := record.Split(p.RecordBatches[:n])
	return batches, p.HighWatermark, err
}

// messagesOf decodes batches into messages from offset on, skipping
// control batches.
func messagesOf(part int32, batches []record.Batch, from int64) ([]message, error) {
	var out []message
	for _, b := range batches {
		if b.IsControl() || b.LastOffset() < from {
			continue
		}
		recs, err := b.Records()
		if err != nil {
			return out, fmt.Errorf("partition %d: batch at %d: %w", part, b.BaseOffset(), err)
		}
		for _, r := range recs {
			off := b.Offset(r)
			if off < from {
				continue
			}
			out = append(out, message{Partition: part, Offset: off, Timestamp: b.Timestamp(r),
				Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value), Headers: cloneHeaders(r.Headers),
				NullKey: r.Key == nil, NullValue: r.Value == nil})
		}
	}
	return out, nil
}

func cloneHeaders(hs []record.Header) []record.Header {
	out := make([]record.Header, len(hs))
	for i, h := range hs {
		out[i] = record.Header{Key: h.Key, Value: bytes.Clone(h.Value)}
	}
	return out
}

// matcher is one filter: a substring, or a regular expression when the
// filter starts with "re:".
type matcher struct {
	sub string
	re  *regexp.Regexp
}

// newMatcher compiles filter f of field name; "" matches everything.
func newMatcher(name, f string) (*matcher, error) {
	if f == "" {
		return nil, nil
	}
	if rest, ok := strings.CutPrefix(f, "re:"); ok {
		re, err := regexp.Compile(rest)
		if err != nil {
			return nil, fmt.Errorf("%s filter %q does not compile: %w", name, f, err)
		}
		return &matcher{re: re}, nil
	}
	return &matcher{sub: f}, nil
}

func (m *matcher) match(b []byte) bool {
	if m.re != nil {
		return m.re.Match(b)
	}
	return bytes.Contains(b, []byte(m.sub))
}

// filters are the message browser's key, value and header filters and
// its expression filter; a record must pass all that are set. A header
// filter "k=v" wants header k with a value containing v; without "=" it
// matches a header's key or value.
type filters struct {
	key, value *matcher
	header     *matcher
	headerKey  string
	headerKV   bool
	expr       *exprFilter
}

func parseFilters(key, value, header, expr string) (filters, error) {
	var f filters
	var err error
	if strings.TrimSpace(expr) != "" {
		if f.expr, err = compileExpr(expr); err != nil {
			return f, err
		}
	}
	if f.key, err = newMatcher("key", key); err != nil {
		return f, err
	}
	if f.value, err = newMatcher("value", value); err != nil {
		return f, err
	}
	if k, v, ok := strings.Cut(header, "="); ok && !strings.HasPrefix(header, "re:") {
		f.headerKey, f.headerKV = k, true
		header = v
		if header == "" {
			header = "re:" // any value
		}
	}
	if f.header, err = newMatcher("header", header); err != nil {
		return f, err
	}
	return f, nil
}

// empty reports whether no filter is set.
func (f filters) empty() bool {
	return f.key == nil && f.value == nil && f.header == nil && f.expr == nil
}

// match reports whether m passes the filters; ctx ends an expression's
// evaluation.
func (f filters) match(ctx context.Context, m *message) bool {
	if f.key != nil && (m.NullKey || !f.key.match(m.Key)) {
		return false
	}
	if f.value != nil && (m.NullValue || !f.value.match(m.Value)) {
		return false
	}
	if f.header != nil && !f.headerMatch(m) {
		return false
	}
	return f.expr == nil || f.expr.match(ctx, m)
}

func (f filters) headerMatch(m *message) bool {
	for _, h := range m.Headers {
		if f.headerKV {
			if h.Key == f.headerKey && f.header.match(h.Value) {
				return true
			}
			continue
		}
		if f.header.match([]byte(h.Key)) || f.header.match(h.Value) {
			return true
		}
	}
	return false
}

// rendered is a key or value as shown: pretty JSON, UTF-8 text or hex.
type rendered struct {
	Text string
	Kind string // json, text, hex, null, empty
}

// render picks how to show b: format "auto" tries JSON, then UTF-8 text,
// then hex; "json", "text" and "hex" force one (falling back to hex).
func render(b []byte, null bool, format string) rendered {
	switch {
	case null:
		return rendered{Kind: "null", Text: "null"}
	case len(b) == 0:
		return rendered{Kind: "empty"}
	}
	if (format == "auto" || format == "json") && json.Valid(b) && (b[0] == '{' || b[0] == '[' || format == "json") {
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") == nil {
			return rendered{Kind: "json", Text: out.String()}
		}
	}
	if (format == "auto" || format == "text" || format == "json") && printable(b) {
		return rendered{Kind: "text", Text: string(b)}
	}
	return rendered{Kind: "hex", Text: hex.EncodeToString(b)}
}

// printable reports whether b is UTF-8 text without control characters
// other than whitespace.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}
