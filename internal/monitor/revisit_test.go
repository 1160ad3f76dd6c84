package monitor

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/internal/msg"
)

func revisitStatus(shard int) msg.Status {
	s := shardStatus(shard)
	r := &msg.RevisitStatus{Scheduled: 100, Due: 5, Overdue: 1, Revisits: 60, NotModified: 40, Changed: 10, Unchanged: 10, Freshness: 0.5 + 0.25*float64(shard)}
	r.Intervals[3] = 60 // 8s-16s
	r.Intervals[23] = 40
	s.Revisit = r
	return s
}

// The sum over shards adds the counts and weighs freshness by scheduled
// URLs; a once crawl's shards give no Revisit.
func TestTotalRevisit(t *testing.T) {
	a, b := revisitStatus(0), revisitStatus(1)
	b.Revisit.Scheduled = 300
	tot := Total([]msg.Status{a, b}).Revisit
	if tot == nil || tot.Scheduled != 400 || tot.Due != 10 || tot.Revisits != 120 || tot.NotModified != 80 || tot.Intervals[3] != 120 {
		t.Fatalf("revisit sums: %+v", tot)
	}
	if want := (0.5*100 + 0.75*300) / 400; tot.Freshness != want {
		t.Errorf("freshness %v, want the weighted mean %v", tot.Freshness, want)
	}
	if r := Total([]msg.Status{shardStatus(0)}).Revisit; r != nil {
		t.Errorf("once mode: revisit %+v, want none", r)
	}
	nm, ch := RevisitShares(*tot)
	if nm != 2.0/3 || ch != 1.0/6 {
		t.Errorf("shares 304 %v changed %v, want 2/3 and 1/6", nm, ch)
	}
}

// The metrics, the text and the page show the revisit block, and a once
// crawl's show none of it.
func TestRevisitViews(t *testing.T) {
	st := revisitStatus(0)
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(func() msg.Status { return st }))
	var buf bytes.Buffer
	if err := WriteText(&buf, Total([]msg.Status{st}), nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"60 leased: 40 not modified (304), 10 changed, 10 unchanged; 304 share 66.7%", "100 URLs scheduled, 5 due, 1 overdue; estimated freshness 50.0%", "interval 8s-16s", ">= 2330h"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}

	hist := &History{interval: time.Second}
	hist.mu.ring = make([]Point, 0, 4)
	now := time.Now()
	prev := revisitStatus(0)
	prev.Revisit.Revisits = 40
	hist.add(pointOf(Total([]msg.Status{prev}), 1, now.Add(-2*time.Second)))
	hist.add(pointOf(Total([]msg.Status{st}), 1, now))
	get := func(h http.Handler, path string) string {
		srv := httptest.NewServer(h)
		defer srv.Close()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	page := func(s msg.Status) string {
		return get(Handler(func() []msg.Status { return []msg.Status{s} }, reg, hist), "/")
	}
	metrics := get(Handler(nil, reg, nil), "/metrics")
	for _, want := range []string{
		`trawl_frontier_revisit_scheduled{shard="0"} 100`, `trawl_frontier_revisit_due{shard="0"} 5`, `trawl_frontier_revisit_overdue{shard="0"} 1`,
		`trawl_frontier_revisit_leased_total{shard="0"} 60`, `trawl_frontier_revisit_outcomes_total{result="not_modified",shard="0"} 40`,
		`trawl_frontier_revisit_outcomes_total{result="changed",shard="0"} 10`, `trawl_frontier_revisit_interval_urls{le_seconds="16",shard="0"} 60`,
		`trawl_frontier_revisit_interval_urls{le_seconds="+Inf",shard="0"} 40`, `trawl_frontier_revisit_estimated_freshness{shard="0"} 0.5`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	html := page(st)
	for _, want := range []string{`<h2 id="revisits">Revisits</h2>`, "<th>revisits/s</th><td>10.0</td>", "<th>ended in 304</th><td>66.667%</td>",
		"<th>found the page changed</th><td>16.667%</td>", "<th>estimated freshness</th><td>50.000%</td>", "<th>interval 8s-16s</th><td>60 URLs</td>",
		`id="chart-revisits"`, `id="chart-due"`, `id="chart-freshness"`} {
		if !strings.Contains(html, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	once := shardStatus(0)
	hist.mu.ring = hist.mu.ring[:0]
	hist.add(pointOf(Total([]msg.Status{once}), 1, now))
	if html := page(once); strings.Contains(html, "Revisits") || strings.Contains(html, "chart-revisits") {
		t.Errorf("a once crawl's page shows revisits")
	}
}
