package sasl

import (
	"context"
	"errors"
	"testing"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
)

// errClient marks a failure raised by the client-side mechanism.
var errClient = errors.New("client")

// exchange runs a franz-go client mechanism against a server session as
// the broker's SaslAuthenticate loop would, relaying the client's %x01
// after an OAUTHBEARER error challenge. It returns the server's error, or
// the client's wrapped in errClient.
func exchange(t *testing.T, client kgosasl.Mechanism, server Session) error {
	t.Helper()
	ctx := context.Background()
	cs, msg, err := client.Authenticate(ctx, "127.0.0.1")
	if err != nil {
		t.Fatalf("client start: %v", err)
	}
	for range 5 {
		reply, err := server.Evaluate(ctx, msg)
		if err != nil {
			if server.Done() {
				t.Fatal("session reports Done after an error")
			}
			if !errors.Is(err, ErrAuthenticationFailed) {
				t.Fatalf("server error %v does not match ErrAuthenticationFailed", err)
			}
			return err
		}
		done, next, err := cs.Challenge(reply)
		if err != nil {
			return errors.Join(errClient, err)
		}
		if done {
			if !server.Done() {
				t.Fatal("client done but server session not Done")
			}
			return nil
		}
		msg = next
	}
	t.Fatal("exchange did not end in 5 rounds")
	return nil
}

// clientMessage is what the client would be told for err.
func clientMessage(t *testing.T, err error) string {
	t.Helper()
	ae, ok := errors.AsType[*AuthError](err)
	if !ok {
		t.Fatalf("error %v is not an *AuthError", err)
	}
	return ae.Message
}
