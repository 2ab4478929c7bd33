package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

func TestScratchCreateThenList(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	cl := b.Client()
	flaps := 0
	for i := range 20 {
		name := fmt.Sprintf("s-%d", i)
		harness.CreateTopic(t, adm, name, 2, nil)
		produceSync(t, b.Client(), &kgo.Record{Topic: name, Partition: 0, Value: []byte("x")})
		if _, err := adm.DeleteTopics(testCtx(t), name, "missing"); err != nil {
			t.Fatal(err)
		}
		harness.CreateTopic(t, adm, name, 1, nil)
		var seq []int16
		for range 40 {
			mt := metadataFor(t, cl, name, false)
			seq = append(seq, mt.ErrorCode)
			time.Sleep(10 * time.Millisecond)
		}
		bad := false
		for _, c := range seq {
			if c != 0 {
				bad = true
			}
		}
		if bad {
			flaps++
			t.Logf("%s: metadata error codes after re-create: %v", name, seq)
		}
	}
	t.Logf("flaps %d of 20", flaps)
}
