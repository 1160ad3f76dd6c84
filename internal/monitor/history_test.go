package monitor

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/msg"
)

// The ring keeps the last Size points, oldest first, each with the rate
// of URLs finished since the one before; Close stops the sampling.
func TestHistoryRing(t *testing.T) {
	var calls atomic.Int64
	status := func() []msg.Status {
		n := calls.Add(1)
		s := shardStatus(0)
		s.Done = 10 * n
		s.Outcomes = map[string]uint64{"2xx": uint64(n), "5xx": uint64(2 * n)}
		return []msg.Status{s}
	}
	h := NewHistory(status, HistoryOptions{Interval: 10 * time.Millisecond, Size: 5})
	deadline := time.Now().Add(30 * time.Second)
	for calls.Load() < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d samples in 30 s", calls.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.Close()
	after := calls.Load()
	time.Sleep(50 * time.Millisecond)
	if calls.Load() != after {
		t.Errorf("status still sampled after Close")
	}
	ps := h.Points()
	if len(ps) != 5 {
		t.Fatalf("%d points kept, want 5", len(ps))
	}
	if last := ps[4].Done; last != 10*after {
		t.Errorf("newest point done %d, want %d", last, 10*after)
	}
	for i := 1; i < len(ps); i++ {
		if !ps[i].Time.After(ps[i-1].Time) || ps[i].Done != ps[i-1].Done+10 {
			t.Fatalf("points out of order at %d: %+v then %+v", i, ps[i-1], ps[i])
		}
		if ps[i].PagesPerSecond <= 0 {
			t.Errorf("point %d: pages/s %v", i, ps[i].PagesPerSecond)
		}
		if _, ok := ps[i].Errors["2xx"]; ok {
			t.Errorf("point %d keeps 2xx among errors: %v", i, ps[i].Errors)
		}
	}
	if ps[4].Errors["5xx"] != uint64(2*after) || ps[4].Shards != 1 || ps[4].TargetFP != 0.01 {
		t.Errorf("newest point %+v", ps[4])
	}
}

// Every chart draws one polyline per series with one vertex per point,
// and the audit chart its interval as a band.
func TestChartsSVG(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ps []Point
	for i := 0; i < 4; i++ {
		s := shardStatus(0)
		s.Done, s.Duplicates = int64(100*i), uint64(50*i)
		s.Outcomes["5xx"] = uint64(i)
		ps = append(ps, pointOf(Total([]msg.Status{s}), 1, t0.Add(time.Duration(i)*5*time.Second)))
	}
	cs := charts(ps)
	if len(cs) < 6 {
		t.Fatalf("%d charts", len(cs))
	}
	for _, c := range cs {
		svg := string(c.SVG())
		if got, want := strings.Count(svg, `class="series"`), len(c.lines); got != want {
			t.Errorf("chart %s: %d polylines, want %d", c.id, got, want)
		}
		for _, pl := range strings.Split(svg, `class="series"`)[1:] {
			pts := pl[strings.Index(pl, `points="`)+8:]
			pts = pts[:strings.IndexByte(pts, '"')]
			if n := len(strings.Fields(pts)); n != 4 {
				t.Errorf("chart %s: a polyline of %d points, want 4: %q", c.id, n, pts)
			}
		}
		if !strings.Contains(svg, "03:04:05") || !strings.Contains(svg, "03:04:20 UTC") {
			t.Errorf("chart %s: no time axis labels", c.id)
		}
	}
	if svg := string(cs[5].SVG()); cs[5].id != "fp" || !strings.Contains(svg, `class="band"`) {
		t.Errorf("audit chart without its interval band")
	}
	if svg := string(charts(nil)[0].SVG()); !strings.Contains(svg, "<svg") {
		t.Errorf("no history: %q", svg)
	}
}
