package txn

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/broker/coordlog/coordlogtest"
	"github.com/strata-broker/strata/broker/producerid"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata/memstore"
)

// testLog is the coordinators' shared test log.
type testLog = coordlogtest.Log

var openTestLog = coordlogtest.Open

// markerLog records the marker work handed to it; the test reports it
// done.
type markerLog struct {
	mu   sync.Mutex
	work []Markers
	done []func()
}

func (ml *markerLog) WriteMarkers(m Markers, done func()) {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	ml.work, ml.done = append(ml.work, m), append(ml.done, done)
}

// take returns the work recorded so far and forgets it.
func (ml *markerLog) take() ([]Markers, []func()) {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	w, d := ml.work, ml.done
	ml.work, ml.done = nil, nil
	return w, d
}

// coordEnv is a coordinator of one __transaction_state partition on a
// real log, with producer ids from the in-memory metadata. Tests run it
// in a synctest bubble.
type coordEnv struct {
	t       *testing.T
	c       *Coordinator
	log     *testLog
	cfg     Config
	pids    *producerid.Allocator
	markers MarkerWriter
}

// testCoordConfig is the broker's default transaction configuration.
func testCoordConfig() Config {
	cfg := ConfigFrom(config.Default())
	cfg.WriteTimeout = 5 * time.Second
	return cfg
}

// newCoordEnv starts a loaded coordinator; markers nil writes none.
func newCoordEnv(t *testing.T, markers MarkerWriter, mod func(*Config)) *coordEnv {
	t.Helper()
	cfg := testCoordConfig()
	if mod != nil {
		mod(&cfg)
	}
	e := &coordEnv{t: t, log: openTestLog(t, t.TempDir()), cfg: cfg, pids: producerid.New(memstore.New()), markers: markers}
	e.start()
	return e
}

// start builds a coordinator over e.log and waits until it is loaded.
func (e *coordEnv) start() {
	e.t.Helper()
	e.c = New(e.cfg, e.pids, e.markers, slog.New(slog.DiscardHandler))
	e.c.SetPartitionCount(1)
	e.c.Elect(0, 0, e.log)
	synctest.Wait()
	if !e.c.Loaded(0) {
		e.t.Fatal("partition not loaded")
	}
	c := e.c
	e.t.Cleanup(func() { c.Close() })
}

// restart closes the coordinator and loads the same log into a new one.
func (e *coordEnv) restart() {
	e.t.Helper()
	e.c.Close()
	e.start()
}

// init runs InitProducerId for id with a 10 s timeout and no expected
// producer.
func (e *coordEnv) init(id string) ProducerIDAndEpoch {
	e.t.Helper()
	p, err := e.c.InitProducerID(context.Background(), id, 10_000, NoProducerID, NoProducerEpoch)
	if err != nil {
		e.t.Fatalf("InitProducerId %s: %v", id, err)
	}
	return p
}

func (e *coordEnv) describe(id string) Description {
	e.t.Helper()
	d, err := e.c.Describe(id)
	if err != nil {
		e.t.Fatalf("describe %s: %v", id, err)
	}
	return d
}
