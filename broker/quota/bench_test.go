package quota

import (
	"strconv"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// BenchmarkRecord is the cost a request pays for quotas: with none set
// (the common case), and with a default-user quota over 100 users.
func BenchmarkRecord(b *testing.B) {
	b.Run("no-quotas", func(b *testing.B) {
		m := New(newQuotas().c, DefaultWindow, nil)
		now := time.Now()
		for b.Loop() {
			m.Record(Produce, "alice", "app", 1024, now)
		}
	})
	b.Run("default-user", func(b *testing.B) {
		q := newQuotas()
		q.set(metadata.QuotaEntity{User: metadata.QuotaDefault}, map[string]float64{"producer_byte_rate": 1 << 40})
		m := New(q.c, DefaultWindow, nil)
		users := make([]string, 100)
		for i := range users {
			users[i] = "user-" + strconv.Itoa(i)
		}
		now := time.Now()
		i := 0
		for b.Loop() {
			m.Record(Produce, users[i%len(users)], "app", 1024, now)
			i++
		}
	})
}
