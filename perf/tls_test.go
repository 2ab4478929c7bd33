package perf

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/strata-broker/strata/internal/testcerts"
)

// TestProduceConsumeTLS: with TLS set, Produce (its topic creation
// included) and Consume (counting the records first) dial over TLS; a
// plaintext run against the same TLS-only broker fails.
func TestProduceConsumeTLS(t *testing.T) {
	ca, err := testcerts.NewCA("perf test CA")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "kfake"}, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair.TLS()}}))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	brokers, cfg := c.ListenAddrs(), &tls.Config{RootCAs: ca.Pool()}
	ctx := testContext(t)
	p, err := Produce(ctx, ProduceOptions{Brokers: brokers, Topic: "t", RecordSize: 10, Records: 500, Partitions: 2, TLS: cfg})
	if err != nil || p.Records != 500 {
		t.Fatalf("produce over TLS: %+v, %v", p, err)
	}
	r, err := Consume(ctx, ConsumeOptions{Brokers: brokers, Topic: "t", TLS: cfg})
	if err != nil || r.Records != 500 {
		t.Fatalf("consume over TLS: %+v, %v", r, err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := Consume(short, ConsumeOptions{Brokers: brokers, Topic: "t"}); err == nil {
		t.Fatal("plaintext consume from a TLS broker succeeded")
	} else if errors.Is(err, ErrEmptyTopic) {
		t.Fatalf("plaintext consume: %v", err)
	}
}
