package quota

import "time"

// Window is how rates are measured: Samples windows of Size each (Kafka's
// quota.window.num and quota.window.size.seconds).
type Window struct {
	Samples int
	Size    time.Duration
}

// DefaultWindow is Kafka's: 11 samples of one second.
var DefaultWindow = Window{Samples: 11, Size: time.Second}

// sample is one window of a rate: what was recorded since start.
type sample struct {
	start time.Time
	value float64
}

// rate is Kafka's Rate over a SampledStat: a ring of samples.
type rate struct {
	samples []sample
	cur     int
	last    time.Time // time of the last record, for expiry
}

func newRate(now time.Time) *rate {
	return &rate{samples: []sample{{start: now}}, last: now}
}

// record adds v at now, moving to the next sample once the current one's
// window has passed.
func (r *rate) record(w Window, v float64, now time.Time) {
	s := &r.samples[r.cur]
	if now.Sub(s.start) >= w.Size {
		r.cur = (r.cur + 1) % w.Samples
		if r.cur >= len(r.samples) {
			r.samples = append(r.samples, sample{start: now})
		} else {
			r.samples[r.cur] = sample{start: now}
		}
		s = &r.samples[r.cur]
	}
	s.value += v
	r.last = now
}

// purge resets the samples whose windows all passed.
func (r *rate) purge(w Window, now time.Time) {
	expire := time.Duration(w.Samples) * w.Size
	for i := range r.samples {
		if now.Sub(r.samples[i].start) > expire {
			r.samples[i] = sample{start: now}
		}
	}
}

// span is the time the rate is measured over at now: from the oldest
// sample's start, but at least Samples-1 whole windows. purge first.
func (r *rate) span(w Window, now time.Time) time.Duration {
	oldest := r.samples[0].start
	for _, s := range r.samples[1:] {
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	if full, minFull := int(elapsed/w.Size), w.Samples-1; full < minFull {
		elapsed += time.Duration(minFull-full) * w.Size
	}
	return max(elapsed, time.Millisecond)
}

// measure is the rate per second at now, and the span it is measured over.
func (r *rate) measure(w Window, now time.Time) (perSecond float64, span time.Duration) {
	r.purge(w, now)
	var total float64
	for _, s := range r.samples {
		total += s.value
	}
	span = r.span(w, now)
	return total / span.Seconds(), span
}

// throttle is how long a client whose rate is perSecond, measured over
// span, waits to be back at quota: (rate - quota) / quota × span;
// zero at or under the quota.
func throttle(perSecond, quota float64, span time.Duration) time.Duration {
	if perSecond <= quota {
		return 0
	}
	if quota <= 0 { // AlterClientQuotas refuses it; a whole span if it is there anyway
		return span
	}
	ms := (perSecond - quota) / quota * float64(span.Milliseconds())
	return time.Duration(ms+0.5) * time.Millisecond
}
