package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/tier/record"
)

// jsonEnd closes a JSON export's array.
const jsonEnd = "\n]\n"

// Export bounds: records per export; the bytes are Options.ExportCap.
const maxExport = 100_000

// exported is one record of a JSON export. Key and value are text when
// they are UTF-8, else base64 (KeyBase64/ValueBase64 set).
type exported struct {
	Partition   int32             `json:"partition"`
	Offset      int64             `json:"offset"`
	Timestamp   int64             `json:"timestamp"`
	Key         *string           `json:"key"`
	KeyBase64   bool              `json:"key_base64,omitempty"`
	Value       *string           `json:"value"`
	ValueBase64 bool              `json:"value_base64,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
}

func textOrBase64(b []byte, null bool) (*string, bool) {
	if null {
		return nil, false
	}
	if printable(b) {
		s := string(b)
		return &s, false
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, true
}

// export writes the query's records as JSON (an array) or CSV, stopping
// before Options.ExportCap bytes; X-Strata-Truncated says it stopped.
func (s *Server) export(q *req) {
	b, ok := s.browseOf(q, maxExport)
	if !ok {
		return
	}
	t := b.Topic
	as := q.r.FormValue("as")
	if as != "json" && as != "csv" {
		s.fail(q, http.StatusBadRequest, fmt.Errorf("as: want json or csv, not %q", as))
		return
	}
	msgs, _, err := scan(q.r.Context(), q.be, b)
	if err != nil {
		s.fail(q, scanStatus(err), err)
		return
	}
	var buf bytes.Buffer
	truncated := false
	if as == "json" {
		buf.WriteString("[")
		for i, m := range msgs {
			e := exported{Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp}
			e.Key, e.KeyBase64 = textOrBase64(m.Key, m.NullKey)
			e.Value, e.ValueBase64 = textOrBase64(m.Value, m.NullValue)
			if len(m.Headers) > 0 {
				e.Headers = map[string]string{}
				for _, h := range m.Headers {
					e.Headers[h.Key] = string(h.Value)
				}
			}
			line, err := json.Marshal(e)
			if err != nil {
				s.fail(q, http.StatusInternalServerError, err)
				return
			}
			sep := "\n"
			if i > 0 {
				sep = ",\n"
			}
			if buf.Len()+len(sep)+len(line)+len(jsonEnd) > s.o.ExportCap {
				truncated = true
				break
			}
			buf.WriteString(sep)
			buf.Write(line)
		}
		buf.WriteString(jsonEnd)
	} else {
		w := csv.NewWriter(&buf)
		_ = w.Write([]string{"partition", "offset", "timestamp", "key", "value", "headers"})
		for _, m := range msgs {
			var hs []string
			for _, h := range m.Headers {
				hs = append(hs, h.Key+"="+string(h.Value))
			}
			before := buf.Len()
			_ = w.Write([]string{strconv.Itoa(int(m.Partition)), strconv.FormatInt(m.Offset, 10), strconv.FormatInt(m.Timestamp, 10),
				string(m.Key), string(m.Value), strings.Join(hs, ";")})
			w.Flush()
			if buf.Len() > s.o.ExportCap {
				buf.Truncate(before)
				truncated = true
				break
			}
		}
		w.Flush()
	}
	h := q.w.Header()
	if as == "json" {
		h.Set("Content-Type", "application/json")
	} else {
		h.Set("Content-Type", "text/csv; charset=utf-8")
	}
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", t.Name+"."+as))
	h.Set("X-Strata-Truncated", strconv.FormatBool(truncated))
	_, _ = q.w.Write(buf.Bytes())
}

// Tail bounds: how long one stream lasts (the browser's EventSource
// reconnects) and how often a partition led elsewhere is polled.
const (
	tailFor  = 10 * time.Minute
	tailPoll = 500 * time.Millisecond
)

// tailExprBudget bounds the cost of the expr filter over one live tail,
// which has no scan limit of its own: the cost of 200 evaluations that
// each hit the per-record limit.
const tailExprBudget = 200 * exprCostLimit

// tail streams the records produced from now on as server-sent events:
// each "record" event's data is a table row of the message browser.
func (s *Server) tail(q *req) {
	b, ok := s.browseOf(q, maxLimit)
	if !ok {
		return
	}
	t := b.Topic
	fl, ok := q.w.(http.Flusher)
	if !ok {
		s.fail(q, http.StatusInternalServerError, errors.New("streaming unsupported"))
		return
	}
	ctx, cancel := context.WithTimeout(q.r.Context(), tailFor)
	defer cancel()
	parts := b.partitions()
	next, err := listOffsets(ctx, q.be, t.Name, parts, -1)
	if err != nil {
		s.fail(q, scanStatus(err), err)
		return
	}
	h := q.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	q.w.WriteHeader(http.StatusOK)
	fmt.Fprintf(q.w, ": tailing %s\n\n", t.Name)
	fl.Flush()
	wake := make(chan struct{}, 1)
	if q.env.Partitions != nil {
		for _, p := range parts {
			if lp, ok := q.env.Partitions.Get(t.Name, p); ok {
				lp.Wait(wake)
				defer lp.Unwait(wake)
			}
		}
	}
	tick := time.NewTicker(tailPoll)
	defer tick.Stop()
	row := s.pages["messages"].Lookup("row")
	for ctx.Err() == nil {
		for _, p := range parts {
			batches, _, err := readBatches(ctx, q.be, t.Name, p, next[p], readChunk)
			if err != nil {
				if errors.Is(err, errPastEnd) || errors.Is(err, kerr.OffsetOutOfRange) {
					continue // a truncated log: wait for it to grow back
				}
				fmt.Fprintf(q.w, "event: failure\ndata: %s\n\n", strings.ReplaceAll(err.Error(), "\n", " "))
				fl.Flush()
				continue
			}
			msgs, _ := messagesOf(p, batches, next[p])
			if len(batches) > 0 {
				next[p] = batches[len(batches)-1].LastOffset() + 1
			}
			for _, m := range msgs {
				matched := b.f.match(ctx, &m)
				if spent := b.f.expr.spentCost(); spent > tailExprBudget {
					fmt.Fprintf(q.w, "event: failure\ndata: the expr filter used up a tail's cost budget (%d of %d); simplify it or tail again\n\n", spent, tailExprBudget)
					fl.Flush()
					return
				}
				if !matched {
					continue
				}
				var out bytes.Buffer
				if err := row.Execute(&out, rowOf(m, b.Format)); err != nil {
					return
				}
				fmt.Fprint(q.w, "event: record\n")
				for _, line := range strings.Split(out.String(), "\n") {
					fmt.Fprintf(q.w, "data: %s\n", line)
				}
				fmt.Fprint(q.w, "\n")
			}
			fl.Flush()
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-tick.C:
		}
	}
}

// maxProduceBody bounds a form's body (the produce form's record).
const maxProduceBody = 1 << 20

// produce appends one record from the form (key, value, headers as
// k=v lines, partition) through the Produce handler, acks=all.
func (s *Server) produce(q *req) {
	t, ok := s.topicOf(q)
	if !ok {
		return
	}
	part, err := intParam(q.r, "partition", 0)
	if err != nil || part < 0 || part >= int64(len(t.Partitions)) {
		s.fail(q, http.StatusBadRequest, fmt.Errorf("partition: topic %q has partitions 0 to %d", t.Name, len(t.Partitions)-1))
		return
	}
	rec := record.Record{Value: []byte(q.r.PostFormValue("value"))}
	if k := q.r.PostFormValue("key"); k != "" {
		rec.Key = []byte(k)
	}
	for line := range strings.SplitSeq(q.r.PostFormValue("headers"), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		rec.Headers = append(rec.Headers, record.Header{Key: k, Value: []byte(v)})
	}
	batch, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli()}, []record.Record{rec})
	if err != nil {
		s.fail(q, http.StatusBadRequest, err)
		return
	}
	st, _ := q.env.Cache.Partition(t.Name, int32(part))
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = t.Name
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = int32(part), batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.SetVersion(9)
	ctx, cancel := context.WithTimeout(q.r.Context(), 15*time.Second)
	defer cancel()
	if !q.be.allowed(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, t.Name) {
		s.fail(q, http.StatusForbidden, fmt.Errorf("write to %q: %w", t.Name, errDenied))
		return
	}
	res, err := q.be.on(ctx, st.Leader, req)
	if err != nil {
		s.fail(q, http.StatusBadGateway, err)
		return
	}
	pr := res.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		s.fail(q, http.StatusBadGateway, errors.New("produce: no answer for the partition"))
		return
	}
	p := pr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		s.fail(q, kafkaStatus(p.ErrorCode), fmt.Errorf("produce to %s-%d: %w", t.Name, part, err))
		return
	}
	q.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(q.w, `<p class="ok" id="produced">Produced to partition %d at offset %d.</p>`, part, p.BaseOffset)
}
