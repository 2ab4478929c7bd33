package broker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/wire"
)

// TestHandlerPanicIsContained: a panicking handler becomes an error for
// its own request (which closes only that connection) and a log line,
// not a crash of the broker.
func TestHandlerPanicIsContained(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := &Server{log: log, env: &handler.Env{}}
	api := handler.API{Key: 3, Min: 0, Max: 12, Fn: func(context.Context, *handler.Env, *handler.Request) (handler.Result, error) {
		panic("boom")
	}}
	req := &handler.Request{Header: wire.Header{Key: 3, Version: 12}, Body: kmsg.NewPtrMetadataRequest()}
	_, err := s.run(context.Background(), api, req, log)
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("err = %v, want a panic error", err)
	}
	if !strings.Contains(logs.String(), "handler panic") {
		t.Fatalf("no log line: %q", logs.String())
	}
	// The same holds for a continuation that runs off the reading goroutine.
	_, err = s.later(context.Background(), api, req, func(context.Context) handler.Result { panic("late boom") }, log)
	if err == nil {
		t.Fatal("continuation panic not turned into an error")
	}
}
