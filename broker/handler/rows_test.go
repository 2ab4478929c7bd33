package handler

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiRow is one row of an API's table test: the scene it runs in, the
// state setup brings it to, the request, and what the answer must be.
// Security (ACL checks) and transactions will add their rows to these
// same tables: a principal and its ACLs, or a transaction the request
// belongs to, are more of a row's scene and setup.
//
// Each row runs at each of its versions on a fresh scene inside a
// synctest bubble: waits (a fetch's long poll, an acks=all produce, a
// group's join phase) run on the bubble's fake clock, which starts at the
// same instant every run, so timeouts cost nothing and "answered at
// once" is exact. The request, like every one a test sends, goes through
// testBroker.try: on the wire to the handler and back.
type apiRow[R kmsg.Response] struct {
	name string
	// versions the row runs at; nil: the lowest served from since on and
	// the highest.
	versions []int16
	since    int16
	scene    sceneOpts // groups is also set by the table's tableOpts
	setup    step
	// req is the request, sent at each of the versions; it must be of
	// the table's API.
	req func(t *testing.T, s *scene) kmsg.Request
	// during, when set, runs once the request blocks waiting (a long poll,
	// an acks=all produce) and should let it finish.
	during step
	// closes: the broker must close the connection rather than answer.
	closes bool
	// codes are the answer's error codes in the order the table's codes
	// function lists them (nil: every one is 0); only tables with one
	// check them.
	codes []int16
	want  check[R]
	// skip names a known deviation from Kafka the row documents.
	skip string
}

// tableOpts are what every row of a table shares.
type tableOpts struct {
	// groups: every scene has ready group coordinators.
	groups bool
	// codes lists an answer's error codes (errorCodes, or codesOf an
	// order of the API's), which are compared with each row's codes;
	// nil: they are not, the rows' wants check them.
	codes func(kmsg.Response) []int16
}

// runRows runs every row of an API's table as a subtest per version.
func runRows[R kmsg.Response](t *testing.T, o tableOpts, rows []apiRow[R]) {
	t.Helper()
	var zero R
	api, ok := Lookup(zero.Key())
	if !ok {
		t.Fatalf("api %d not registered", zero.Key())
	}
	for _, r := range rows {
		vs := r.versions
		if vs == nil {
			vs = slices.Compact([]int16{max(api.Min, r.since), api.Max})
		}
		r.scene.groups = r.scene.groups || o.groups
		for _, v := range vs {
			t.Run(fmt.Sprintf("%s/v%d", r.name, v), func(t *testing.T) {
				if r.skip != "" {
					t.Skip(r.skip)
				}
				t.Parallel() // rows spend most of their time in their logs' file I/O
				synctest.Test(t, func(t *testing.T) { r.run(t, o, v) })
			})
		}
	}
}

func (r apiRow[R]) run(t *testing.T, o tableOpts, v int16) {
	s := newScene(t, r.scene, v)
	if r.setup != nil {
		r.setup(t, s)
	}
	req := r.req(t, s)
	if key := (*new(R)).Key(); req.Key() != key {
		t.Fatalf("row sends %s to the table of %s", kmsg.NameForKey(req.Key()), kmsg.NameForKey(key))
	}
	req.SetVersion(v)
	start := time.Now()
	var resp kmsg.Response
	var err error
	if r.during == nil {
		resp, err = s.try(req)
	} else {
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err = s.try(req)
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("answered at once; the row expects the request to wait")
		default:
		}
		r.during(t, s)
		<-done
	}
	s.took = time.Since(start)
	switch {
	case r.closes && err == nil:
		t.Fatalf("answered %+v; want the connection closed", resp)
	case r.closes:
		return
	case err != nil:
		t.Fatal(err)
	}
	var answer R
	if resp != nil {
		answer = resp.(R)
	}
	if o.codes != nil {
		wantCodes(t, o.codes(answer), r.codes)
	}
	if r.want != nil {
		r.want(t, s, answer)
	}
}

// check examines an answer of type Resp.
type check[Resp any] = func(*testing.T, *scene, Resp)

// checks runs several checks of one answer in order.
func checks[Resp any](fs ...check[Resp]) check[Resp] {
	return func(t *testing.T, s *scene, resp Resp) {
		t.Helper()
		for _, f := range fs {
			f(t, s, resp)
		}
	}
}

// step is a piece of a row's setup.
type step = func(t *testing.T, s *scene)

// steps runs setup steps in order.
func steps(ss ...step) step {
	return func(t *testing.T, s *scene) {
		t.Helper()
		for _, st := range ss {
			st(t, s)
		}
	}
}

// versionsFrom lists the versions of key served from v on.
func versionsFrom(key kmsg.Key, v int16) []int16 {
	a, _ := Lookup(key.Int16())
	return span(max(v, a.Min), a.Max)
}

// versionsTo lists the versions of key served up to v.
func versionsTo(key kmsg.Key, v int16) []int16 {
	a, _ := Lookup(key.Int16())
	return span(a.Min, min(v, a.Max))
}

// span lists the versions lo..hi.
func span(lo, hi int16) []int16 {
	var out []int16
	for v := lo; v <= hi; v++ {
		out = append(out, v)
	}
	return out
}

// errorCodes lists the ErrorCode fields of a response depth first, in
// field order: a top-level code (where the API has one) before those of
// its items, an item's before those of its sub-items.
func errorCodes(r kmsg.Response) []int16 {
	return codeFields(r, func(field string) bool { return field == "ErrorCode" })
}

// codeFields lists, depth first in field order, the values of r's int16
// fields whose names match.
func codeFields(r kmsg.Response, match func(field string) bool) []int16 {
	var out []int16
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				switch {
				case match(f.Name) && f.Type.Kind() == reflect.Int16:
					out = append(out, int16(v.Field(i).Int()))
				case f.IsExported():
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(r))
	return out
}

// codesOf is a table's codes function listing an answer's codes in an
// order of the API's own (f) rather than errorCodes'.
func codesOf[R kmsg.Response](f func(R) []int16) func(kmsg.Response) []int16 {
	return func(r kmsg.Response) []int16 { return f(r.(R)) }
}

// wantCodes compares error codes; want nil asks for all zero.
func wantCodes(t *testing.T, got, want []int16) {
	t.Helper()
	if want == nil {
		want = make([]int16, len(got))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("error codes %v, want %v", codeNames(got), codeNames(want))
	}
}

func codeNames(codes []int16) []string {
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = "NONE"
		if err := kerr.ErrorForCode(c); err != nil {
			out[i] = err.(*kerr.Error).Message
		}
	}
	return out
}

// Error codes the tables expect, by short names.
var (
	codeInvalidTopic        = kerr.InvalidTopicException.Code
	codeInvalidPartitions   = kerr.InvalidPartitions.Code
	codeInvalidRF           = kerr.InvalidReplicationFactor.Code
	codeInvalidAssignment   = kerr.InvalidReplicaAssignment.Code
	codeInvalidConfig       = kerr.InvalidConfig.Code
	codeInvalidRequest      = kerr.InvalidRequest.Code
	codeUnknownTopic        = kerr.UnknownTopicOrPartition.Code
	codeTopicAlreadyExists  = kerr.TopicAlreadyExists.Code
	codeNotCoordinator      = kerr.NotCoordinator.Code
	codeCoordinatorNA       = kerr.CoordinatorNotAvailable.Code
	codeInvalidGroupID      = kerr.InvalidGroupID.Code
	codeUnknownMember       = kerr.UnknownMemberID.Code
	codeIllegalGeneration   = kerr.IllegalGeneration.Code
	codeRebalancing         = kerr.RebalanceInProgress.Code
	codeFencedInstance      = kerr.FencedInstanceID.Code
	codeInconsistentProto   = kerr.InconsistentGroupProtocol.Code
	codeGroupNotFound       = kerr.GroupIDNotFound.Code
	codeNonEmptyGroup       = kerr.NonEmptyGroup.Code
	codeStaleMemberEpoch    = kerr.StaleMemberEpoch.Code
	codeFencedMemberEpoch   = kerr.FencedMemberEpoch.Code
	codeUnsupportedVersion  = kerr.UnsupportedVersion.Code
	codeSubscribedToTopic   = kerr.GroupSubscribedToTopic.Code
	codeMetadataTooLarge    = kerr.OffsetMetadataTooLarge.Code
	codeInvalidSession      = kerr.InvalidSessionTimeout.Code
	codeGroupMaxSize        = kerr.GroupMaxSizeReached.Code
	codeMemberIDRequired    = kerr.MemberIDRequired.Code
	codeUnreleasedInstance  = kerr.UnreleasedInstanceID.Code
	codeUnsupportedAssignor = kerr.UnsupportedAssignor.Code
)
