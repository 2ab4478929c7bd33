package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// Bounds of one browse: records shown, records scanned per partition
// (filters skip the others), and the time spent.
const (
	defaultLimit = 50
	maxLimit     = 500
	maxScan      = 100_000
	scanTime     = 5 * time.Second
)

// browse is a parsed message query.
type browse struct {
	Topic      metadata.Topic
	Partition  int64 // -1: all
	Seek       string
	Offset     int64
	Timestamp  string
	Limit      int64
	Key, Value string
	Header     string
	Expr       string // CEL, see expr.go
	Format     string
	f          filters
	tsMs       int64
}

// parseBrowse reads the message query of r; errors are the user's.
func parseBrowse(r *http.Request, t metadata.Topic, limitMax int64) (*browse, error) {
	b := &browse{Topic: t, Seek: r.FormValue("seek"), Timestamp: r.FormValue("ts"), Format: r.FormValue("format"),
		Key: r.FormValue("key"), Value: r.FormValue("value"), Header: r.FormValue("header"), Expr: r.FormValue("expr")}
	var err error
	if b.Partition, err = intParam(r, "partition", -1); err != nil {
		return nil, err
	}
	if b.Partition < -1 || b.Partition >= int64(len(t.Partitions)) {
		return nil, fmt.Errorf("partition: topic %q has partitions 0 to %d", t.Name, len(t.Partitions)-1)
	}
	if b.Offset, err = intParam(r, "offset", 0); err != nil {
		return nil, err
	}
	if b.Limit, err = intParam(r, "limit", defaultLimit); err != nil {
		return nil, err
	}
	if b.Limit < 1 || b.Limit > limitMax {
		return nil, fmt.Errorf("limit: want 1 to %d", limitMax)
	}
	switch b.Format {
	case "":
		b.Format = "auto"
	case "auto", "json", "text", "hex":
	default:
		return nil, fmt.Errorf("format: want auto, json, text or hex, not %q", b.Format)
	}
	switch b.Seek {
	case "":
		b.Seek = "end"
	case "end", "start":
	case "offset":
		if b.Offset < 0 {
			return nil, fmt.Errorf("offset: %d is negative", b.Offset)
		}
	case "timestamp":
		if b.tsMs, err = parseTime(b.Timestamp); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("seek: want start, end, offset or timestamp, not %q", b.Seek)
	}
	if b.f, err = parseFilters(b.Key, b.Value, b.Header, b.Expr); err != nil {
		return nil, err
	}
	return b, nil
}

// parseTime reads a timestamp: milliseconds since the epoch, RFC 3339,
// or the browser's datetime-local (UTC).
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("timestamp %q: want milliseconds since the epoch or 2006-01-02T15:04:05", s)
}

// partitions are the partitions a query reads.
func (b *browse) partitions() []int32 {
	if b.Partition >= 0 {
		return []int32{int32(b.Partition)}
	}
	return allPartitions(b.Topic)
}

// allPartitions is the ids of t's partitions.
func allPartitions(t metadata.Topic) []int32 {
	out := make([]int32, 0, len(t.Partitions))
	for i := range int32(len(t.Partitions)) {
		out = append(out, i)
	}
	return out
}

// listOffsets asks each partition's leader for the offset at ts (-1
// latest, -2 earliest, or a timestamp; -1 when none is that late).
func listOffsets(ctx context.Context, be *backend, topic string, parts []int32, ts int64) (map[int32]int64, error) {
	offs, errs := listOffsetsOf(ctx, be, map[string][]int32{topic: parts}, ts)
	if err := errs[topic]; err != nil {
		return nil, err
	}
	return offs[topic], nil
}

// listOffsetsOf is listOffsets for many topics, in one request per
// leader; a topic whose offsets are not all known has an error instead.
func listOffsetsOf(ctx context.Context, be *backend, parts map[string][]int32, ts int64) (map[string]map[int32]int64, map[string]error) {
	errs := map[string]error{}
	byLeader := map[int32]map[string][]int32{}
	for topic, ps := range parts {
		for _, p := range ps {
			st, ok := be.env.Cache.Partition(topic, p)
			if !ok || st.Leader < 0 {
				errs[topic] = fmt.Errorf("%s-%d: no leader", topic, p)
				break
			}
			if byLeader[st.Leader] == nil {
				byLeader[st.Leader] = map[string][]int32{}
			}
			byLeader[st.Leader][topic] = append(byLeader[st.Leader][topic], p)
		}
	}
	out := map[string]map[int32]int64{}
	for leader, topics := range byLeader {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		for topic, ps := range topics {
			if errs[topic] != nil {
				continue
			}
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			for _, p := range ps {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		if len(req.Topics) == 0 {
			continue
		}
		res, err := be.on(ctx, leader, req)
		if err != nil {
			for topic := range topics {
				errs[topic] = cmp.Or(errs[topic], err)
			}
			continue
		}
		for _, t := range res.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errs[t.Topic] = cmp.Or(errs[t.Topic], fmt.Errorf("%s-%d: list offsets: %w", t.Topic, p.Partition, err))
					continue
				}
				if out[t.Topic] == nil {
					out[t.Topic] = map[int32]int64{}
				}
				out[t.Topic][p.Partition] = p.Offset
			}
		}
	}
	for topic := range errs {
		delete(out, topic)
	}
	return out, errs
}

// scan runs a query: for each partition, from its start, the records
// that pass the filters, up to limit per partition; then the newest
// limit of them all. It stops at the high watermark, after maxScan
// records or scanTime.
func scan(ctx context.Context, be *backend, b *browse) ([]message, int, error) {
	ctx, cancel := context.WithTimeout(ctx, scanTime)
	defer cancel()
	parts := b.partitions()
	starts, err := startOffsets(ctx, be, b, parts)
	if err != nil {
		return nil, 0, err
	}
	var out []message
	scanned := 0
	for _, p := range parts {
		off, ok := starts[p]
		if !ok || off < 0 {
			continue
		}
		// From the end, the newest matches are wanted: the whole window
		// is read, keeping the last Limit.
		fromEnd := b.Seek == "end"
		var got []message
		for n := 0; n < maxScan && (fromEnd || int64(len(got)) < b.Limit) && ctx.Err() == nil; {
			batches, hw, err := readBatches(ctx, be, b.Topic.Name, p, off, readChunk)
			if err != nil {
				return nil, scanned, err
			}
			msgs, err := messagesOf(p, batches, off)
			if err != nil {
				return nil, scanned, err
			}
			for i := range msgs {
				n++
				scanned++
				if b.f.match(ctx, &msgs[i]) {
					got = append(got, msgs[i])
				}
			}
			if fromEnd && int64(len(got)) > 2*b.Limit {
				got = slices.Delete(got, 0, len(got)-int(b.Limit))
			}
			if len(batches) == 0 {
				break
			}
			if off = batches[len(batches)-1].LastOffset() + 1; off >= hw {
				break
			}
		}
		if int64(len(got)) > b.Limit {
			if fromEnd {
				got = got[int64(len(got))-b.Limit:]
			} else {
				got = got[:b.Limit]
			}
		}
		out = append(out, got...)
	}
	slices.SortFunc(out, func(x, y message) int {
		return cmp.Or(cmp.Compare(x.Timestamp, y.Timestamp), cmp.Compare(x.Partition, y.Partition), cmp.Compare(x.Offset, y.Offset))
	})
	if int64(len(out)) > b.Limit {
		if b.Seek == "end" {
			out = out[int64(len(out))-b.Limit:]
		} else {
			out = out[:b.Limit]
		}
	}
	return out, scanned, nil
}

// startOffsets is where the query starts in each partition.
func startOffsets(ctx context.Context, be *backend, b *browse, parts []int32) (map[int32]int64, error) {
	switch b.Seek {
	case "start":
		return listOffsets(ctx, be, b.Topic.Name, parts, -2)
	case "timestamp":
		return listOffsets(ctx, be, b.Topic.Name, parts, b.tsMs)
	case "offset":
		ends, err := listOffsets(ctx, be, b.Topic.Name, parts, -1)
		if err != nil {
			return nil, err
		}
		out := map[int32]int64{}
		for _, p := range parts {
			if b.Offset > ends[p] {
				return nil, fmt.Errorf("%s-%d: offset %d, high watermark %d: %w", b.Topic.Name, p, b.Offset, ends[p], errPastEnd)
			}
			out[p] = b.Offset
		}
		return out, nil
	}
	starts, err := listOffsets(ctx, be, b.Topic.Name, parts, -2)
	if err != nil {
		return nil, err
	}
	ends, err := listOffsets(ctx, be, b.Topic.Name, parts, -1)
	if err != nil {
		return nil, err
	}
	back := b.Limit
	if !b.f.empty() {
		back = maxScan
	}
	for p, end := range ends {
		starts[p] = max(starts[p], end-back)
	}
	return starts, nil
}

// messageRow is one message as the page shows it.
type messageRow struct {
	Partition int32
	Offset    int64
	Timestamp int64
	Key       rendered
	Value     rendered
	Headers   []headerRow
}

type headerRow struct {
	Key   string
	Value rendered
}

func rowOf(m message, format string) messageRow {
	r := messageRow{Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp,
		Key: render(m.Key, m.NullKey, format), Value: render(m.Value, m.NullValue, format)}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, headerRow{Key: h.Key, Value: render(h.Value, h.Value == nil, "text")})
	}
	return r
}

// messagesData is the message browser's data.
type messagesData struct {
	Q       *browse
	Rows    []messageRow
	Scanned int
	Parts   []int32
	Query   string
}

// readTopic checks the user may read the page's topic.
func (s *Server) readTopic(q *req) (metadata.Topic, bool) {
	t, ok := s.topicOf(q)
	if !ok {
		return t, false
	}
	if !q.be.allowed(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Name) {
		s.fail(q, http.StatusForbidden, fmt.Errorf("read topic %q: %w", t.Name, errDenied))
		return t, false
	}
	return t, true
}

// browseOf is the request's query of a topic the user may read, with
// at most limit records; false (answered) when there is none.
func (s *Server) browseOf(q *req, limit int64) (*browse, bool) {
	t, ok := s.readTopic(q)
	if !ok {
		return nil, false
	}
	b, err := parseBrowse(q.r, t, limit)
	if err != nil {
		s.fail(q, http.StatusBadRequest, err)
		return nil, false
	}
	return b, true
}

func (s *Server) messages(q *req) {
	b, ok := s.browseOf(q, maxLimit)
	if !ok {
		return
	}
	t := b.Topic
	msgs, scanned, err := scan(q.r.Context(), q.be, b)
	if err != nil {
		s.fail(q, scanStatus(err), err)
		return
	}
	d := messagesData{Q: b, Scanned: scanned, Parts: allPartitions(t), Query: q.r.URL.RawQuery}
	for _, m := range msgs {
		d.Rows = append(d.Rows, rowOf(m, b.Format))
	}
	s.render(q, "messages", t.Name+" messages", "topics", d)
}

// scanStatus is the HTTP status of a failed scan.
func scanStatus(err error) int {
	switch {
	case errors.Is(err, errPastEnd), errors.Is(err, kerr.OffsetOutOfRange):
		return http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case strings.Contains(err.Error(), "no leader"):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}
