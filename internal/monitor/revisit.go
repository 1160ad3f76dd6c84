package monitor

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/internal/msg"
)

// A continuous crawl's revisit schedule (msg.Status.Revisit), in every
// view: the sum over shards, the metrics, the text and the page. A crawl
// in once mode has no Revisit: its text and page show none of this, and
// its metrics are zeros.

var (
	dRvScheduled = desc("revisit_scheduled", "Done URLs with a next visit scheduled (continuous mode).")
	dRvDue       = desc("revisit_due", "Scheduled URLs due now or earlier.")
	dRvOverdue   = desc("revisit_overdue", "Scheduled URLs due for longer than revisit.min: revisits fall behind when this grows.")
	dRvLeased    = desc("revisit_leased_total", "Revisits leased to crawlers.")
	dRvEnded     = desc("revisit_outcomes_total", "Revisits reported, by result: not_modified (304), changed (a new payload digest), unchanged (the same digest).", "result")
	dRvInterval  = desc("revisit_interval_urls", "Scheduled URLs by revisit interval: bucket le_seconds holds intervals below it and at least half of it (the last, +Inf, the rest).", "le_seconds")
	dRvFresh     = desc("revisit_estimated_freshness", "Estimated share of scheduled URLs whose stored copy is current, from each URL's estimated change rate.")
	revisitDescs = []*prometheus.Desc{dRvScheduled, dRvDue, dRvOverdue, dRvLeased, dRvEnded, dRvInterval, dRvFresh}
)

// collectRevisit sends r's metrics for shard; zeros for a nil r (once
// mode), so that the dashboard and the alerts find every series in any
// crawl.
func collectRevisit(ch chan<- prometheus.Metric, r *msg.RevisitStatus, shard string) {
	if r == nil {
		r = &msg.RevisitStatus{}
	}
	m := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, append([]string{shard}, labels...)...)
	}
	m(dRvScheduled, prometheus.GaugeValue, float64(r.Scheduled))
	m(dRvDue, prometheus.GaugeValue, float64(r.Due))
	m(dRvOverdue, prometheus.GaugeValue, float64(r.Overdue))
	m(dRvLeased, prometheus.CounterValue, float64(r.Revisits))
	m(dRvEnded, prometheus.CounterValue, float64(r.NotModified), "not_modified")
	m(dRvEnded, prometheus.CounterValue, float64(r.Changed), "changed")
	m(dRvEnded, prometheus.CounterValue, float64(r.Unchanged), "unchanged")
	for i, n := range r.Intervals {
		le := "+Inf"
		if i < len(r.Intervals)-1 {
			le = strconv.Itoa(1 << (i + 1))
		}
		m(dRvInterval, prometheus.GaugeValue, float64(n), le)
	}
	m(dRvFresh, prometheus.GaugeValue, r.Freshness)
}

// addRevisit adds s to the sum t (nil until a shard has a schedule);
// the freshness is weighted by scheduled URLs.
func addRevisit(t *msg.RevisitStatus, s *msg.RevisitStatus) *msg.RevisitStatus {
	if s == nil {
		return t
	}
	if t == nil {
		t = &msg.RevisitStatus{}
	}
	w := t.Freshness * float64(t.Scheduled)
	t.Scheduled += s.Scheduled
	t.Due += s.Due
	t.Overdue += s.Overdue
	t.Revisits += s.Revisits
	t.NotModified += s.NotModified
	t.Changed += s.Changed
	t.Unchanged += s.Unchanged
	for i, n := range s.Intervals {
		t.Intervals[i] += n
	}
	if t.Scheduled > 0 {
		t.Freshness = (w + s.Freshness*float64(s.Scheduled)) / float64(t.Scheduled)
	}
	return t
}

// RevisitShares are the shares of the reported revisits that ended in a
// 304 and that found a changed page (0 when none was reported).
func RevisitShares(r msg.RevisitStatus) (notModified, changed float64) {
	n := r.NotModified + r.Changed + r.Unchanged
	if n == 0 {
		return 0, 0
	}
	return float64(r.NotModified) / float64(n), float64(r.Changed) / float64(n)
}

// IntervalBucket is one non-empty bucket of the interval distribution.
type IntervalBucket struct {
	Range string // e.g. "1m4s-2m8s"
	URLs  int64
}

// IntervalBuckets lists r's non-empty interval buckets, shortest first.
func IntervalBuckets(r msg.RevisitStatus) []IntervalBucket {
	var out []IntervalBucket
	for i, n := range r.Intervals {
		if n == 0 {
			continue
		}
		lo := time.Duration(1<<i) * time.Second
		rng := fmt.Sprintf("%v-%v", lo, 2*lo)
		if i == len(r.Intervals)-1 {
			rng = fmt.Sprintf(">= %v", lo)
		}
		out = append(out, IntervalBucket{Range: rng, URLs: n})
	}
	return out
}

// revisitRate is revisits leased per second between the last two points
// (0 with fewer, or none with a schedule).
func revisitRate(ps []Point) float64 {
	if len(ps) < 2 {
		return 0
	}
	p, q := ps[len(ps)-1], ps[len(ps)-2]
	dt := p.Time.Sub(q.Time).Seconds()
	if p.Revisit == nil || q.Revisit == nil || dt <= 0 || p.Revisit.Revisits < q.Revisit.Revisits {
		return 0
	}
	return float64(p.Revisit.Revisits-q.Revisit.Revisits) / dt
}

// RevisitPoint is the revisit schedule in a history point.
type RevisitPoint struct {
	Due         int64   `json:"due"`
	Overdue     int64   `json:"overdue"`
	Revisits    uint64  `json:"revisits"`
	NotModified uint64  `json:"not_modified"`
	Changed     uint64  `json:"changed"`
	Freshness   float64 `json:"freshness"`
}

func revisitPoint(r *msg.RevisitStatus) *RevisitPoint {
	if r == nil {
		return nil
	}
	return &RevisitPoint{Due: r.Due, Overdue: r.Overdue, Revisits: r.Revisits, NotModified: r.NotModified, Changed: r.Changed, Freshness: r.Freshness}
}
