package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// stdin is what `strata topic produce` reads; tests replace it.
var stdin io.Reader = os.Stdin

// maxLine is the longest line (one record) produce reads.
const maxLine = 16 << 20

// ProducedRecord is where produce wrote one record.
type ProducedRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
	Error     string `json:"error,omitempty"`
}

// runTopicProduce is `strata topic produce <topic>`: one record per line
// of standard input, each printed as it is acknowledged (acks=all).
func runTopicProduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("topic produce", topicUsage, stderr)
	var key, delim string
	var headers keyValues
	partition := -1
	f.fs.StringVar(&key, "key", "", "the key of every record")
	f.fs.StringVar(&key, "k", "", "short for --key")
	f.fs.StringVar(&delim, "key-delimiter", "", "split each line into key and value at the first of this string")
	f.fs.Var(&headers, "header", "a header key=value of every record (repeatable)")
	f.fs.Var(&headers, "H", "short for --header")
	f.fs.IntVar(&partition, "partition", -1, "produce to this partition (-1: by key, or spread)")
	f.fs.IntVar(&partition, "p", -1, "short for --partition")
	pos, err := f.parse(args, 1, 1, "one topic")
	if err != nil {
		return err
	}
	if key != "" && delim != "" {
		return errors.New("give --key or --key-delimiter, not both")
	}
	opts := []kgo.Opt{kgo.DefaultProduceTopic(pos[0]), kgo.ProducerLinger(0)}
	if partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := f.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var hs []kgo.RecordHeader
	for _, kv := range headers.pairs() {
		hs = append(hs, kgo.RecordHeader{Key: kv[0], Value: []byte(kv[1])})
	}

	var mu sync.Mutex
	var failed, produced int
	report := func(r *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		pr := ProducedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Error: errString(err)}
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "produce: %v\n", err)
		} else {
			produced++
		}
		if f.asJSON() {
			_ = writeJSONLine(stdout, pr)
		} else if err == nil {
			fmt.Fprintf(stdout, "Produced to partition %d at offset %d\n", pr.Partition, pr.Offset)
		}
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() && ctx.Err() == nil {
		line := sc.Text()
		r := &kgo.Record{Value: []byte(line), Headers: hs, Partition: int32(partition)}
		switch {
		case key != "":
			r.Key = []byte(key)
		case delim != "":
			if k, v, ok := strings.Cut(line, delim); ok {
				r.Key, r.Value = []byte(k), []byte(v)
			}
		}
		cl.Produce(ctx, r, report)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read standard input: %w", err)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d records failed", failed, failed+produced)
	}
	return ctx.Err()
}

// ConsumedRecord is one record as `strata topic consume --format json`
// prints it. A key or value that is not UTF-8 is base64 with its
// *_encoding set.
type ConsumedRecord struct {
	Topic         string         `json:"topic"`
	Partition     int32          `json:"partition"`
	Offset        int64          `json:"offset"`
	Timestamp     int64          `json:"timestamp"`
	Key           *string        `json:"key"`
	KeyEncoding   string         `json:"key_encoding,omitempty"`
	Value         *string        `json:"value"`
	ValueEncoding string         `json:"value_encoding,omitempty"`
	Headers       []RecordHeader `json:"headers,omitempty"`
}

// RecordHeader is one header of a consumed record.
type RecordHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// text is b as a JSON string field: nil stays null, non-UTF-8 is base64.
func text(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}

// consumeStart is where consume begins: -o.
type consumeStart struct {
	kind string // start, end, offset, time
	n    int64
}

func parseConsumeStart(s string) (consumeStart, error) {
	switch s {
	case "start", "oldest", "beginning":
		return consumeStart{kind: "start"}, nil
	case "end", "newest":
		return consumeStart{kind: "end"}, nil
	}
	if ms, ok := strings.CutPrefix(s, "@"); ok {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			t, terr := time.Parse(time.RFC3339, ms)
			if terr != nil {
				return consumeStart{}, fmt.Errorf("-o %s: want @<unix ms> or @<RFC 3339 time>", s)
			}
			n = t.UnixMilli()
		}
		return consumeStart{kind: "time", n: n}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return consumeStart{}, fmt.Errorf("-o %q: want start, end, an offset or @<unix ms>", s)
	}
	return consumeStart{kind: "offset", n: n}, nil
}

// kgoOffset is the start as a franz-go reset offset.
func (s consumeStart) kgoOffset() kgo.Offset {
	switch s.kind {
	case "end":
		return kgo.NewOffset().AtEnd()
	case "offset":
		return kgo.NewOffset().At(s.n)
	case "time":
		return kgo.NewOffset().AfterMilli(s.n)
	}
	return kgo.NewOffset().AtStart()
}

// runTopicConsume is `strata topic consume <topic>...`.
func runTopicConsume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newKafkaFlags("topic consume", topicUsage, stderr)
	var from, group, layout string
	var num int
	var exitAtEnd bool
	var parts multiFlag
	f.fs.StringVar(&from, "offset", "start", "where to begin: start, end, an offset, or @<unix ms> (@<RFC 3339> too)")
	f.fs.StringVar(&from, "o", "start", "short for --offset")
	f.fs.IntVar(&num, "num", 0, "stop after this many records (0: no limit)")
	f.fs.IntVar(&num, "n", 0, "short for --num")
	f.fs.Var(&parts, "partitions", "only these partitions (comma-separated)")
	f.fs.Var(&parts, "p", "short for --partitions")
	f.fs.StringVar(&group, "group", "", "consume as a member of this group, committing its offsets")
	f.fs.StringVar(&group, "g", "", "short for --group")
	f.fs.BoolVar(&exitAtEnd, "exit-at-end", false, "stop once each partition reached its end as of the start")
	f.fs.BoolVar(&exitAtEnd, "e", false, "short for --exit-at-end")
	f.fs.StringVar(&layout, "f", "%v\\n", "record layout: %t %p %o %k %v %d %h %H (as rpk -f)")
	topics, err := f.parse(args, 1, -1, "one or more topics")
	if err != nil {
		return err
	}
	start, err := parseConsumeStart(from)
	if err != nil {
		return err
	}
	if group != "" && len(parts) > 0 {
		return errors.New("give --group or --partitions, not both")
	}
	formatter, err := kgo.NewRecordFormatter(layout)
	if err != nil {
		return fmt.Errorf("-f %q: %w", layout, err)
	}
	adm, err := f.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	plan, err := planConsume(ctx, adm, topics, parts, start, group)
	if err != nil {
		return err
	}
	// Control records (transaction markers) come too, so -e sees the
	// partitions' ends; they are not printed.
	opts := []kgo.Opt{kgo.KeepControlRecords()}
	if group != "" {
		opts = append(opts, kgo.ConsumeTopics(topics...), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(start.kgoOffset()))
	} else {
		opts = append(opts, kgo.ConsumePartitions(plan.offsets()))
	}
	cl, err := f.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	remaining := plan.remaining(exitAtEnd)
	seen, buf := 0, []byte(nil)
	for (num == 0 || seen < num) && !(exitAtEnd && len(remaining) == 0) {
		fetches := cl.PollRecords(ctx, num-seen)
		if ctx.Err() != nil {
			break
		}
		for _, fe := range fetches.Errors() {
			return fmt.Errorf("fetch %s-%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		for _, r := range fetches.Records() {
			tp := kadm.Partition{Topic: r.Topic, Partition: r.Partition}
			if end, ok := remaining[tp]; ok && r.Offset+1 >= end {
				delete(remaining, tp)
			}
			if r.Attrs.IsControl() {
				continue
			}
			if num > 0 && seen >= num {
				break
			}
			seen++
			if f.asJSON() {
				cr := ConsumedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}
				cr.Key, cr.KeyEncoding = text(r.Key)
				cr.Value, cr.ValueEncoding = text(r.Value)
				for _, h := range r.Headers {
					cr.Headers = append(cr.Headers, RecordHeader{Key: h.Key, Value: string(h.Value)})
				}
				if err := writeJSONLine(stdout, cr); err != nil {
					return err
				}
			} else {
				buf = formatter.AppendRecord(buf[:0], r)
				if _, err := stdout.Write(buf); err != nil {
					return fmt.Errorf("write: %w", err)
				}
			}
		}
	}
	if group != "" {
		cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		if err := cl.CommitUncommittedOffsets(cctx); err != nil {
			return fmt.Errorf("commit offsets of group %s: %w", group, err)
		}
	}
	return nil
}

// consumePlan is each partition's start and end offsets when consume
// begins.
type consumePlan map[kadm.Partition][2]int64

func (p consumePlan) offsets() map[string]map[int32]kgo.Offset {
	out := map[string]map[int32]kgo.Offset{}
	for tp, se := range p {
		if out[tp.Topic] == nil {
			out[tp.Topic] = map[int32]kgo.Offset{}
		}
		out[tp.Topic][tp.Partition] = kgo.NewOffset().At(se[0])
	}
	return out
}

// remaining is, with exitAtEnd, the partitions that have records left
// before their end offsets, and those ends; nil without.
func (p consumePlan) remaining(exitAtEnd bool) map[kadm.Partition]int64 {
	if !exitAtEnd {
		return nil
	}
	out := map[kadm.Partition]int64{}
	for tp, se := range p {
		if se[0] < se[1] {
			out[tp] = se[1]
		}
	}
	return out
}

// planConsume finds the partitions of topics (only parts, when given)
// and where consuming them starts and ends: at the group's committed
// offsets when it has them, else at start.
func planConsume(ctx context.Context, adm *kadm.Client, topics []string, parts []string, start consumeStart, group string) (consumePlan, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	keep := map[int32]bool{}
	for _, s := range parts {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--partitions %q: want partition numbers", s)
		}
		keep[int32(n)] = true
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	var from kadm.ListedOffsets
	switch start.kind {
	case "start":
		from, err = adm.ListStartOffsets(ctx, topics...)
	case "time":
		from, err = adm.ListOffsetsAfterMilli(ctx, start.n, topics...)
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	var committed kadm.OffsetResponses
	if group != "" {
		if committed, err = adm.FetchOffsetsForTopics(ctx, group, topics...); err != nil {
			return nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
		}
	}
	plan := consumePlan{}
	for _, t := range topics {
		if _, ok := ends[t]; !ok {
			return nil, fmt.Errorf("topic %s: not found", t)
		}
	}
	ends.Each(func(e kadm.ListedOffset) {
		if len(keep) > 0 && !keep[e.Partition] {
			return
		}
		at := e.Offset
		switch start.kind {
		case "start", "time":
			if o, ok := from.Lookup(e.Topic, e.Partition); ok && o.Err == nil && o.Offset >= 0 {
				at = o.Offset
			}
		case "offset":
			at = min(start.n, e.Offset)
		}
		if c, ok := committed.Lookup(e.Topic, e.Partition); ok && c.Err == nil && c.At >= 0 {
			at = c.At
		}
		plan[kadm.Partition{Topic: e.Topic, Partition: e.Partition}] = [2]int64{at, e.Offset}
	})
	for p := range keep {
		found := false
		for tp := range plan {
			found = found || tp.Partition == p
		}
		if !found {
			return nil, fmt.Errorf("partition %d: not found", p)
		}
	}
	return plan, nil
}

// writeJSONLine prints v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
