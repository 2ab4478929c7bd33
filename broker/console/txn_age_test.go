package console_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// txnRowID finds the transactional id of each row of the transactions
// page, in order.
var txnRowID = regexp.MustCompile(`<tr class="[^"]*"><td>([^<]+)</td>`)

// TestTransactionsByAge: the transactions page lists the open
// transactions oldest first, whatever their ids' order.
func TestTransactionsByAge(t *testing.T) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "ages", 1, nil)
	begin := func(id string) {
		t.Helper()
		cl := s.b.Client(kgo.TransactionalID(id), kgo.DefaultProduceTopic("ages"))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(t, cl, &kgo.Record{Value: []byte(id)})
	}
	begin("txn-z-old")
	// Once the page shows the first transaction a millisecond old, the
	// second starts later than it.
	s.waitForMatch("/transactions", regexp.MustCompile(`(?s)<td>txn-z-old</td>.*?<td class="n age">[1-9]\d*</td>`))
	begin("txn-a-new")
	body := s.must("/transactions", "txn-a-new")
	var ids []string
	for _, m := range txnRowID.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	if got := strings.Join(ids, ","); got != "txn-z-old,txn-a-new" {
		t.Fatalf("transactions in order %s, want txn-z-old,txn-a-new (oldest first)\n%s", got, body)
	}
}
