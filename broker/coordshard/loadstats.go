package coordshard

import "time"

// LoadStats sums up the partition loads of a table, for Kafka's
// partition-load-time-max and partition-load-time-avg of the group and
// transaction coordinator metrics.
type LoadStats struct {
	Count int           // loads published
	Total time.Duration // their summed time, from Elect to Publish
	Max   time.Duration // the longest
}

// loadStats accumulates LoadStats; the table's lock guards it.
type loadStats struct{ s LoadStats }

func (l *loadStats) add(d time.Duration) {
	l.s.Count++
	l.s.Total += d
	l.s.Max = max(l.s.Max, d)
}

// Loads returns the loads published so far.
func (t *Table[S]) Loads() LoadStats {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.loads.s
}
