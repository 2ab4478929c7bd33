package broker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/test/harness"
)

// TestReleasedFramesKeepWhatHandlersKept makes handler.API.ReleasesFrame
// enforceable: for every API whose table row says its handler releases
// the request frame, two requests of the same size go over one
// connection, so the second is read into the first one's buffer; what
// the first request stored must read back unchanged. An API marked in the
// table without a check here fails the test.
func TestReleasedFramesKeepWhatHandlersKept(t *testing.T) {
	checks := map[kmsg.Key]func(t *testing.T, b *harness.Broker, c *rawConn){
		kmsg.Produce:      checkProduceReleasesFrame,
		kmsg.OffsetCommit: checkOffsetCommitReleasesFrame,
	}
	var marked []kmsg.Key
	for _, k := range handler.Keys() {
		if api, _ := handler.Lookup(k); api.ReleasesFrame {
			marked = append(marked, api.Key)
		}
	}
	if len(marked) == 0 {
		t.Fatal("no API releases its frame: the check has nothing to guard")
	}
	b := harness.Start(t, nil)
	for _, k := range marked {
		t.Run(k.Name(), func(t *testing.T) {
			check, ok := checks[k]
			if !ok {
				t.Fatalf("%s is marked ReleasesFrame in broker/handler/table.go but has no check here", k.Name())
			}
			check(t, b, dialRaw(t, b.Addr()))
		})
	}
}

// checkProduceReleasesFrame: records appended by one Produce survive the
// next Produce (other values, same size) overwriting its frame.
func checkProduceReleasesFrame(t *testing.T, b *harness.Broker, c *rawConn) {
	const topic = "frame-reuse-produce"
	harness.CreateTopic(t, b.Admin(), topic, 1, nil)
	values := [][]byte{bytes.Repeat([]byte{'a'}, 512), bytes.Repeat([]byte{'b'}, 512)}
	for _, v := range values {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, 1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: time.Now().UnixMilli(), Records: []harness.RawRecord{{Value: v}}})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		c.send(req)
	}
	for range values {
		resp := c.recv(kmsg.NewPtrProduceResponse()).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: error code %d", code)
		}
	}
	got := harness.ReadAll(t, b.Addr(), topic)[0]
	if len(got) != len(values) {
		t.Fatalf("read %d records, want %d", len(got), len(values))
	}
	for i, r := range got {
		if !bytes.Equal(r.Value, values[i]) {
			t.Errorf("record %d reads %.8q…, want %.8q…: the log kept a view of a reused frame", i, r.Value, values[i])
		}
	}
}

// checkOffsetCommitReleasesFrame: offsets (and their metadata strings)
// committed by one OffsetCommit survive the next OffsetCommit (another
// group, same size) overwriting its frame.
func checkOffsetCommitReleasesFrame(t *testing.T, b *harness.Broker, c *rawConn) {
	const topic = "frame-reuse-commit"
	harness.CreateTopic(t, b.Admin(), topic, 1, nil)
	adm := b.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	commits := []struct {
		group, meta string
		offset      int64
	}{{"frame-reuse-ga", "meta-aaaa", 11}, {"frame-reuse-gb", "meta-bbbb", 22}}
	// Load the groups' coordinator partitions first, so the raw commits
	// are not turned away while __consumer_offsets comes up (kadm retries
	// that; raw frames do not).
	warm := kadm.Offsets{}
	warm.AddOffset(topic, 0, 1, -1)
	for _, cm := range commits {
		if r, err := adm.CommitOffsets(ctx, cm.group, warm); err != nil || r.Error() != nil {
			t.Fatalf("warm-up commit of %s: %v %v", cm.group, err, r.Error())
		}
	}
	for _, cm := range commits {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 8, cm.group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.LeaderEpoch, rp.Metadata = cm.offset, -1, kmsg.StringPtr(cm.meta)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		c.send(req)
	}
	for range commits {
		resp := c.recv(kmsg.NewPtrOffsetCommitResponse()).(*kmsg.OffsetCommitResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("offset commit: error code %d", code)
		}
	}
	for _, cm := range commits {
		got, err := adm.FetchOffsets(ctx, cm.group)
		if err == nil {
			err = got.Error()
		}
		if err != nil {
			t.Fatalf("fetch offsets of %s: %v", cm.group, err)
		}
		o, _ := got.Lookup(topic, 0)
		if o.At != cm.offset || o.Metadata != cm.meta {
			t.Errorf("group %s reads offset %d metadata %q, want %d %q: the coordinator kept a view of a reused frame", cm.group, o.At, o.Metadata, cm.offset, cm.meta)
		}
	}
}

// rawConn sends requests and reads responses in Kafka framing over one
// TCP connection, so consecutive requests reach the broker on the same
// connection.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	fmtr *kmsg.RequestFormatter
	corr int32
	sent []kmsg.Request // requests not yet answered, in order
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, harness.OpTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(harness.OpTimeout))
	return &rawConn{t: t, c: c, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("frame-reuse"))}
}

func (r *rawConn) send(req kmsg.Request) {
	r.t.Helper()
	r.corr++
	if _, err := r.c.Write(r.fmtr.AppendRequest(nil, req, r.corr)); err != nil {
		r.t.Fatalf("send %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	r.sent = append(r.sent, req)
}

// recv reads the response to the oldest unanswered request into resp.
func (r *rawConn) recv(resp kmsg.Response) kmsg.Response {
	r.t.Helper()
	req := r.sent[0]
	r.sent = r.sent[1:]
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		r.t.Fatalf("read %s response size: %v", kmsg.NameForKey(req.Key()), err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.c, buf); err != nil {
		r.t.Fatalf("read %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	resp.SetVersion(req.GetVersion())
	rd := kbin.Reader{Src: buf}
	rd.Int32() // correlation id: responses come in request order
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		kmsg.SkipTags(&rd)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		r.t.Fatalf("decode %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}
