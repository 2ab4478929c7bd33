package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-broker/strata/perf"
)

// The raw replication peer (-raw): the bytes of the throughput runs moved
// the way any Kafka-style broker must move them, with nothing else. A
// client writes 1 MiB frames over TCP to a leader, which reads each into a
// reused buffer, checks a CRC-32C over it and appends it to a file; with
// RF=3 the leader also sends each appended range from its file with
// sendfile to two followers, which read, check and append it likewise and
// answer with their new end; followers drop their pages behind as
// Strata's do by default. The leader acknowledges a frame once every
// replica has it (acks=all). There is no protocol encoding, no record
// parsing, no index, no metadata: its CPU per MB is about the floor of
// what a Kafka-style broker spends on the same bytes on this machine (its
// client, which writes ready-made frames, costs less than a real
// producer, which is why its ratio is lower than a broker's).
//
// Concurrency: every replica connection has its goroutines (a follower's
// reader, the leader's sender to it and the reader of its answers, one
// per client connection and one answering it); a partition's mu guards
// the leader's file end and the followers' ends, and its cond announces
// changes to either.

// rawFrame is the client's frame size and the most a follower is sent at
// once (Kafka's replica.fetch.max.bytes).
const rawFrame = 1 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rawFollowerWindow is the page-cache window of the followers' files, as
// Strata's default replica.page.cache.window.bytes: older bytes are handed
// to writeback and dropped behind in rawDropStep steps. Leaders keep
// theirs, as Strata's do by default.
const (
	rawFollowerWindow = 64 << 20
	rawDropStep       = 8 << 20
)

// rawLog is one replica's append-only file.
type rawLog struct {
	f   *os.File
	end int64
	// Drop-behind (window > 0): bytes handed to writeback, and dropped.
	window, writtenBack, dropped int64
}

func newRawLog(path string, window int64) (*rawLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("raw log: %w", err)
	}
	return &rawLog{f: f, window: window}, nil
}

// readFrame reads one length-prefixed frame from r into buf and computes
// its CRC, as a broker validates a batch, and returns the frame and CRC.
func readFrame(r io.Reader, buf []byte) ([]byte, uint32, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int(n) > len(buf) {
		return nil, 0, fmt.Errorf("raw: frame of %d bytes", n)
	}
	b := buf[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, 0, err
	}
	return b, crc32.Checksum(b, castagnoli), nil
}

// append writes b at the log's end.
func (l *rawLog) append(b []byte) error {
	if _, err := l.f.WriteAt(b, l.end); err != nil {
		return err
	}
	l.end += int64(len(b))
	for l.window > 0 && l.end-l.writtenBack > l.window+rawDropStep {
		_ = unix.SyncFileRange(int(l.f.Fd()), l.writtenBack, rawDropStep, unix.SYNC_FILE_RANGE_WRITE)
		l.writtenBack += rawDropStep
		for l.writtenBack-l.dropped > 2*rawDropStep {
			_ = unix.Fadvise(int(l.f.Fd()), l.dropped, rawDropStep, unix.FADV_DONTNEED)
			l.dropped += rawDropStep
		}
	}
	return nil
}

// rawPartition is one partition's leader and followers.
type rawPartition struct {
	leader *rawLog

	mu      sync.Mutex
	cond    *sync.Cond
	acked   []int64 // each follower's end
	stopped bool
}

// rawRun is one raw throughput run.
type rawRun struct {
	dir   string
	parts []*rawPartition
	lis   net.Listener
	wg    sync.WaitGroup
	conns []net.Conn
	logs  []*rawLog
}

// startRaw starts `partitions` raw partitions with rf replicas each.
func startRaw(dir string, rf, partitions int) (*rawRun, error) {
	r := &rawRun{dir: dir}
	var err error
	if r.lis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	for p := range partitions {
		lg, err := newRawLog(filepath.Join(dir, fmt.Sprintf("p%d-leader", p)), 0)
		if err != nil {
			return nil, errors.Join(err, r.stop())
		}
		r.logs = append(r.logs, lg)
		rp := &rawPartition{leader: lg, acked: make([]int64, rf-1)}
		rp.cond = sync.NewCond(&rp.mu)
		r.parts = append(r.parts, rp)
		for i := range rf - 1 {
			fl, err := newRawLog(filepath.Join(dir, fmt.Sprintf("p%d-follower%d", p, i)), rawFollowerWindow)
			if err != nil {
				return nil, errors.Join(err, r.stop())
			}
			r.logs = append(r.logs, fl)
			lc, fc, err := r.pair()
			if err != nil {
				return nil, errors.Join(err, r.stop())
			}
			r.wg.Go(func() { rawFollow(fc, fl) })
			r.wg.Go(func() { rp.replicate(i, lc) })
		}
	}
	return r, nil
}

// pair returns both ends of a new loopback TCP connection.
func (r *rawRun) pair() (net.Conn, net.Conn, error) {
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := r.lis.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", r.lis.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	s, ok := <-accepted
	if !ok {
		c.Close()
		return nil, nil, errors.New("raw: accept failed")
	}
	r.conns = append(r.conns, c, s)
	return s, c, nil
}

// rawFollow appends what the leader sends and answers with its new end.
func rawFollow(c net.Conn, l *rawLog) {
	var ack [8]byte
	buf := make([]byte, rawFrame)
	for {
		b, _, err := readFrame(c, buf)
		if err != nil {
			return
		}
		if err := l.append(b); err != nil {
			return
		}
		binary.BigEndian.PutUint64(ack[:], uint64(l.end))
		if _, err := c.Write(ack[:]); err != nil {
			return
		}
	}
}

// replicate sends follower i what the leader appended, from the leader's
// file, and records the follower's answers.
func (p *rawPartition) replicate(i int, c net.Conn) {
	go func() {
		var ack [8]byte
		for {
			if _, err := io.ReadFull(c, ack[:]); err != nil {
				return
			}
			p.mu.Lock()
			p.acked[i] = int64(binary.BigEndian.Uint64(ack[:]))
			p.cond.Broadcast()
			p.mu.Unlock()
		}
	}()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return
	}
	var sent int64
	var hdr [4]byte
	for {
		p.mu.Lock()
		for !p.stopped && p.leader.end == sent {
			p.cond.Wait()
		}
		end, stopped := p.leader.end, p.stopped
		p.mu.Unlock()
		if stopped {
			return
		}
		n := min(end-sent, rawFrame)
		binary.BigEndian.PutUint32(hdr[:], uint32(n))
		if _, err := c.Write(hdr[:]); err != nil {
			return
		}
		off := sent
		left := n
		werr := raw.Write(func(fd uintptr) bool {
			for left > 0 {
				m, err := syscall.Sendfile(int(fd), int(p.leader.f.Fd()), &off, int(left))
				if m > 0 {
					left -= int64(m)
				}
				if err == syscall.EAGAIN {
					return false
				}
				if err != nil && err != syscall.EINTR {
					return true
				}
			}
			return true
		})
		if werr != nil || left > 0 {
			return
		}
		sent += n
	}
}

// serveClient appends the client's frames and acknowledges each once all
// replicas have it.
func (p *rawPartition) serveClient(c net.Conn) {
	type pending struct{ end int64 }
	acks := make(chan pending, 16)
	go func() {
		var ack [8]byte
		for a := range acks {
			p.mu.Lock()
			for !p.stopped && !p.replicated(a.end) {
				p.cond.Wait()
			}
			p.mu.Unlock()
			binary.BigEndian.PutUint64(ack[:], uint64(a.end))
			if _, err := c.Write(ack[:]); err != nil {
				return
			}
		}
	}()
	defer close(acks)
	buf := make([]byte, rawFrame)
	for {
		b, _, err := readFrame(c, buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		err = p.leader.append(b)
		end := p.leader.end
		p.cond.Broadcast()
		p.mu.Unlock()
		if err != nil {
			return
		}
		acks <- pending{end}
	}
}

// replicated reports whether every follower has the log up to end. Caller
// holds mu.
func (p *rawPartition) replicated(end int64) bool {
	for _, a := range p.acked {
		if a < end {
			return false
		}
	}
	return true
}

// produce runs `clients` raw clients per partition for d, each keeping
// `inflight` frames unacknowledged, and returns the bytes acknowledged.
func (r *rawRun) produce(ctx context.Context, d time.Duration, clients, inflight int) (int64, error) {
	payload := make([]byte, rawFrame)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	var total int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for _, p := range r.parts {
		for range clients {
			cc, sc, err := r.pair()
			if err != nil {
				return 0, err
			}
			r.wg.Go(func() { p.serveClient(sc) })
			wg.Go(func() {
				n := rawClient(ctx, cc, payload, inflight, deadline)
				mu.Lock()
				total += n
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return total, ctx.Err()
}

// rawClient writes frames until deadline with up to inflight of them
// unacknowledged and returns the bytes acknowledged.
func rawClient(ctx context.Context, c net.Conn, payload []byte, inflight int, deadline time.Time) int64 {
	// A frame takes a slot before it is sent; the reader frees one as it
	// starts waiting for the next acknowledgement.
	slots := make(chan struct{}, max(inflight-1, 0))
	var acked int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ack [8]byte
		for range slots {
			if _, err := io.ReadFull(c, ack[:]); err != nil {
				return
			}
			acked += int64(len(payload))
		}
	}()
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)))
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-done: // the connection failed
			return acked
		}
		if _, err := c.Write(hdr[:]); err != nil {
			break
		}
		if _, err := c.Write(payload); err != nil {
			break
		}
	}
	close(slots)
	<-done
	return acked
}

// stop ends the run and deletes its files.
func (r *rawRun) stop() error {
	for _, p := range r.parts {
		p.mu.Lock()
		p.stopped = true
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	if r.lis != nil {
		r.lis.Close()
	}
	for _, c := range r.conns {
		c.Close()
	}
	r.wg.Wait()
	var errs []error
	for _, l := range r.logs {
		errs = append(errs, l.f.Close())
	}
	entries, _ := os.ReadDir(r.dir)
	for _, e := range entries {
		errs = append(errs, os.Remove(filepath.Join(r.dir, e.Name())))
	}
	return errors.Join(errs...)
}

// rawThroughput runs the raw peer RF=1, RF=3, RF=3, RF=1 and returns the
// summary line.
func rawThroughput(ctx context.Context, dir string, o options) (string, error) {
	totals := map[int][2]float64{} // MB, CPU seconds
	walls := map[int]float64{}
	for i, rf := range throughputOrder {
		d := filepath.Join(dir, fmt.Sprintf("raw-%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		r, err := startRaw(d, rf, o.partitions)
		if err != nil {
			return "", err
		}
		if o.warmup > 0 {
			if _, err := r.produce(ctx, o.warmup, 2, 5); err != nil {
				_ = r.stop()
				return "", fmt.Errorf("raw RF=%d warm-up: %w", rf, err)
			}
		}
		cpu0, t0 := perf.SelfCPU(), time.Now()
		n, err := r.produce(ctx, o.duration, 2, 5)
		cpu, wall := (perf.SelfCPU() - cpu0).Seconds(), time.Since(t0).Seconds()
		if serr := r.stop(); err == nil {
			err = serr
		}
		if err != nil {
			return "", fmt.Errorf("raw RF=%d: %w", rf, err)
		}
		mb := float64(n) / (1 << 20)
		fmt.Printf("raw RF=%d: %.1f MB/s, cpu %.2f cores (%.2f ms/MB)\n", rf, mb/wall, cpu/wall, cpu*1000/mb)
		t := totals[rf]
		totals[rf] = [2]float64{t[0] + mb, t[1] + cpu}
		walls[rf] += wall
	}
	one, three := totals[1][0]/walls[1], totals[3][0]/walls[3]
	return fmt.Sprintf("raw peer (frames over TCP, CRC, pwrite, sendfile to followers; nothing else): RF=1 %.1f MB/s (%.2f ms/MB), RF=3 %.1f MB/s (%.2f ms/MB), ratio %.2f",
		one, totals[1][1]*1000/totals[1][0], three, totals[3][1]*1000/totals[3][0], three/one), nil
}
