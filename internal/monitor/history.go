package monitor

import (
	"context"
	"sync"
	"time"

	"github.com/trawlhq/trawl/internal/msg"
)

// Default history: one point every 5 s for the last hour.
const (
	DefaultHistoryInterval = 5 * time.Second
	DefaultHistorySize     = 720
)

// errorClasses are the outcome classes the history keeps as errors.
var errorClasses = []string{"4xx", "5xx", "error"}

// Point is the crawl at one moment, summed over the shards: what the
// status page charts. Counters are cumulative; PagesPerSecond is the rate
// of URLs finished since the previous point (0 for the first).
type Point struct {
	Time           time.Time         `json:"time"`
	Done           int64             `json:"done"`
	Queued         int64             `json:"queued"`
	Leased         int64             `json:"leased"`
	Pending        int64             `json:"pending"` // stream backlog
	PagesPerSecond float64           `json:"pages_per_second"`
	Duplicates     uint64            `json:"duplicates"`
	Errors         map[string]uint64 `json:"errors"` // outcomes 4xx, 5xx, error
	Fill           float64           `json:"fill"`
	ImpliedFP      float64           `json:"implied_fp"`
	TargetFP       float64           `json:"target_fp"`
	AuditRate      float64           `json:"audit_rate"`
	AuditLow       float64           `json:"audit_low"` // Wilson 95% interval
	AuditHigh      float64           `json:"audit_high"`
	AuditSampled   uint64            `json:"audit_sampled"`     // sampled new keys plus skips
	Shards         int               `json:"shards"`            // shards that answered
	Revisit        *RevisitPoint     `json:"revisit,omitempty"` // continuous mode only
}

// pointOf builds the point for t, the sum of the shards at now.
func pointOf(t msg.Status, shards int, now time.Time) Point {
	p := Point{
		Time: now, Done: t.Done, Queued: t.Queued, Leased: t.Leased, Pending: t.Pending,
		Duplicates: t.Duplicates, Errors: make(map[string]uint64, len(errorClasses)),
		Fill: t.Filter.Fill, ImpliedFP: t.Filter.ImpliedFP, TargetFP: t.Filter.TargetFP,
		AuditRate: t.Audit.Rate, AuditLow: t.Audit.Low, AuditHigh: t.Audit.High,
		AuditSampled: t.Audit.SampledNew + t.Audit.FPSkips, Shards: shards, Revisit: revisitPoint(t.Revisit),
	}
	for _, c := range errorClasses {
		p.Errors[c] = t.Outcomes[c]
	}
	return p
}

// HistoryOptions configures NewHistory; zero fields take the defaults.
type HistoryOptions struct {
	Interval time.Duration // between points (default 5 s)
	Size     int           // points kept (default 720: an hour at 5 s)
}

// History samples the crawl's status at a fixed interval into a ring of
// the last Size points. It owns one goroutine, stopped by Close.
type History struct {
	status   func() []msg.Status
	interval time.Duration
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu struct {
		sync.Mutex
		ring []Point // grows to cap Size, then is overwritten at head
		head int     // the oldest point once the ring is full
	}
}

// NewHistory takes a first point at once, then one every interval until
// Close. status is called from the history's goroutine.
func NewHistory(status func() []msg.Status, opts HistoryOptions) *History {
	if opts.Interval <= 0 {
		opts.Interval = DefaultHistoryInterval
	}
	if opts.Size <= 0 {
		opts.Size = DefaultHistorySize
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &History{status: status, interval: opts.Interval, cancel: cancel}
	h.mu.ring = make([]Point, 0, opts.Size)
	h.wg.Add(1)
	go h.run(ctx)
	return h
}

// Interval is the time between two points.
func (h *History) Interval() time.Duration { return h.interval }

// Close stops the sampling and waits for it.
func (h *History) Close() {
	h.cancel()
	h.wg.Wait()
}

func (h *History) run(ctx context.Context) {
	defer h.wg.Done()
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.sample(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample adds the point for now; a moment no shard answered is skipped.
func (h *History) sample(now time.Time) {
	all := h.status()
	if len(all) == 0 {
		return
	}
	h.add(pointOf(Total(all), len(all), now))
}

// add appends p, computing its rate from the previous point.
func (h *History) add(p Point) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.lastLocked(); ok {
		if dt := p.Time.Sub(prev.Time).Seconds(); dt > 0 && p.Done >= prev.Done {
			p.PagesPerSecond = float64(p.Done-prev.Done) / dt
		}
	}
	r := &h.mu
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, p)
		return
	}
	r.ring[r.head] = p
	r.head = (r.head + 1) % len(r.ring)
}

func (h *History) lastLocked() (Point, bool) {
	r := &h.mu
	switch {
	case len(r.ring) == 0:
		return Point{}, false
	case len(r.ring) < cap(r.ring):
		return r.ring[len(r.ring)-1], true
	}
	return r.ring[(r.head+len(r.ring)-1)%len(r.ring)], true
}

// Points returns the points kept, oldest first.
func (h *History) Points() []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &h.mu
	out := make([]Point, 0, len(r.ring))
	out = append(out, r.ring[r.head:]...)
	return append(out, r.ring[:r.head]...)
}
