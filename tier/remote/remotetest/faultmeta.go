// Package remotetest holds test support for code that reads the tier:
// a wrapper of the remote-segment records that injects the faults a real
// metadata store cannot be made to produce on demand. It imports only
// metadata, so tier/remote's own tests can use it too.
package remotetest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/strata-broker/strata/metadata"
)

// ErrUnreachable is the error of a list while a FaultMeta is down.
var ErrUnreachable = errors.New("remotetest: metadata store unreachable")

// FaultMeta wraps remote-segment records: it counts lists and, while Down, fails
// them with ErrUnreachable, or, while Hang, blocks them until their
// context ends (signalling Started first, if set). Writes pass through.
type FaultMeta struct {
	metadata.RemoteSegments
	Lists   atomic.Int64
	Down    atomic.Bool
	Hang    atomic.Bool
	Started chan struct{}
}

// ListRemoteSegments implements metadata.RemoteSegments.
func (m *FaultMeta) ListRemoteSegments(ctx context.Context, id metadata.TopicID, p int32) ([]string, [][]byte, error) {
	m.Lists.Add(1)
	if m.Hang.Load() {
		if m.Started != nil {
			m.Started <- struct{}{}
		}
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	if m.Down.Load() {
		return nil, nil, ErrUnreachable
	}
	return m.RemoteSegments.ListRemoteSegments(ctx, id, p)
}

// HangCanceled makes lists hang and returns a child of ctx that is
// canceled once a list has started (Started must be set): a caller whose
// context ends while its list hangs.
func (m *FaultMeta) HangCanceled(ctx context.Context) context.Context {
	m.Hang.Store(true)
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		<-m.Started
		cancel()
	}()
	return cctx
}
