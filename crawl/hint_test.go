package crawl

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// oneHostSite serves pages /p/0../p/(n-1), each after latency, page i
// linking to 2i+1 and 2i+2 (a binary tree: the queue grows ahead of the
// fetches); robots.txt is absent (404: allow all).
func oneHostSite(t *testing.T, n int, latency time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || i < 0 || i >= n {
			http.NotFound(w, r)
			return
		}
		time.Sleep(latency)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body>page %d", i)
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < n {
				fmt.Fprintf(w, ` <a href="/p/%d">%d</a>`, c, c)
			}
		}
		fmt.Fprint(w, "</body></html>")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// oneHostCrawl crawls a 100-page single-host site with 16 workers and
// --min-delay 0, the per-host limit set to inflight.
func oneHostCrawl(t *testing.T, inflight int) *Summary {
	t.Helper()
	srv := oneHostSite(t, 100, 5*time.Millisecond)
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Frontier.Filter.Capacity = 10_000
	cfg.Frontier.MetricsAddr = ""
	cfg.Frontier.MaxInflightPerHost = inflight
	cfg.Politeness.MinDelay = 0
	cfg.Crawler.Workers = 16
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawl.Seeds = []string{srv.URL + "/p/0"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := Run(ctx, Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.StopReason != StopDone || sum.Fetched != 100 {
		t.Fatalf("crawl: stop %q, fetched %d of 100", sum.StopReason, sum.Fetched)
	}
	return sum
}

func TestSummaryHintsAtThePerHostLimit(t *testing.T) {
	sum := oneHostCrawl(t, 1)
	var out bytes.Buffer
	if err := sum.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "--max-inflight-per-host") || len(sum.Hints) == 0 {
		t.Fatalf("16 workers held to 1 request at a time on one host, and the summary does not say why:\n%s", out.String())
	}
	t.Logf("%.2fs with max_inflight_per_host 1: %s", sum.Seconds, sum.Hints[0])
}

func TestSummaryNoHintWithEnoughInflight(t *testing.T) {
	sum := oneHostCrawl(t, 16)
	var out bytes.Buffer
	if err := sum.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "--max-inflight-per-host") || len(sum.Hints) != 0 {
		t.Fatalf("max_inflight_per_host 16 for 16 workers, and the summary still hints at it:\n%s", out.String())
	}
	t.Logf("%.2fs with max_inflight_per_host 16", sum.Seconds)
}

func TestHostLimitObserve(t *testing.T) {
	host := func(queued int64, inflight int) msg.HostStatus {
		return msg.HostStatus{Host: "h.test", Queued: queued, Inflight: inflight}
	}
	tests := []struct {
		name     string
		perHost  int
		minDelay time.Duration
		status   msg.Status
		hint     bool
	}{
		{"one host, limit 1", 1, 0, msg.Status{Queued: 50, Leased: 1, Hosts: 1, TopHosts: []msg.HostStatus{host(50, 1)}}, true},
		{"one host, limit 16", 16, 0, msg.Status{Queued: 50, Leased: 16, Hosts: 1, TopHosts: []msg.HostStatus{host(50, 16)}}, false},
		{"one host, limit 1, a delay", 1, time.Second, msg.Status{Queued: 50, Leased: 1, Hosts: 1, TopHosts: []msg.HostStatus{host(50, 1)}}, false},
		{"nothing queued", 1, 0, msg.Status{Hosts: 1, TopHosts: []msg.HostStatus{host(0, 1)}}, false},
		{"more hosts than listed", 1, 0, msg.Status{Queued: 50, Leased: 1, Hosts: 30, TopHosts: []msg.HostStatus{host(50, 1)}}, false},
		{"all workers busy", 1, 0, msg.Status{Queued: 50, Leased: 16, Hosts: 1, TopHosts: []msg.HostStatus{host(50, 1)}}, false},
	}
	for _, tt := range tests {
		cfg := config.Default()
		cfg.Crawler.Workers, cfg.Frontier.MaxInflightPerHost = 16, tt.perHost
		l := newHostLimit(cfg)
		for i := 0; i < 3; i++ {
			l.observe(Snapshot{Frontier: tt.status})
		}
		if got := len(l.hints(tt.minDelay)) > 0; got != tt.hint {
			t.Errorf("%s: hint %v, want %v", tt.name, got, tt.hint)
		}
	}
}
