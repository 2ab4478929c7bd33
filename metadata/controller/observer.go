package controller

import (
	"context"
	"sync"

	"github.com/strata-broker/strata/metadata"
)

// Observer tracks which broker is the controller, for any broker's
// Metadata and DescribeCluster answers (ControllerID). It follows the
// controller record in the metadata store, so it works on every broker, elected or not.
type Observer struct {
	mu      sync.Mutex
	info    metadata.ControllerInfo
	changed chan struct{} // closed and replaced at every new record
	done    chan struct{} // closed when the watch ended
}

// Observe starts following the controller record until ctx ends or the
// store closes. Until the first read lands ControllerID is
// metadata.NoController.
func Observe(ctx context.Context, store metadata.ControllerWatcher) *Observer {
	o := &Observer{
		info:    metadata.ControllerInfo{ID: metadata.NoController},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	ch := store.WatchController(ctx)
	go func() {
		defer close(o.done)
		for info := range ch {
			o.mu.Lock()
			o.info = info
			close(o.changed)
			o.changed = make(chan struct{})
			o.mu.Unlock()
		}
	}()
	return o
}

// ControllerID is the current controller's broker id, or
// metadata.NoController (-1) when none is known.
func (o *Observer) ControllerID() int32 { return o.Info().ID }

// Info is the latest controller record seen: id and controller epoch.
func (o *Observer) Info() metadata.ControllerInfo {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.info
}

// Changed returns a channel closed when the next record arrives.
func (o *Observer) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// Done is closed once the observer stopped following (ctx ended or the
// store closed); Info then keeps its last value.
func (o *Observer) Done() <-chan struct{} { return o.done }
