// Package scale measures horizontal scaling: a latency-bound synthetic web
// (50 ms per response, 1,000 hosts) crawled by 1, 2, 4 and 8 crawler
// processes (8 fetches each) against one frontier and one NATS server, all
// as processes on loopback (scripts/cluster-local.sh):
//
//	cd bench && go test -run '^$' -bench Scaling -benchtime 1x ./scale
//
// Each run seeds every host, lets robots.txt and the first pages go by
// (10 s), then counts the pages finished in the next 15 s.
package scale

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/synthweb"
	"github.com/trawlhq/trawl/internal/testkit/clustertest"
)

var binDir string

func root() string { r, _ := filepath.Abs("../.."); return r }

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "trawl-scale-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := clustertest.Build(root(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	workersPerCrawler = 8
	warmup            = 10 * time.Second
	window            = 15 * time.Second
)

func measure(b *testing.B, crawlers int) float64 {
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost = 1000, 60
	wc.Latency = 50 * time.Millisecond
	wc.ErrorRate, wc.RobotsFraction = 0, 0
	wc.MaxRecorded = 1 // the request log is not needed here
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		b.Fatal(err)
	}
	defer web.Close()
	c := clustertest.Start(b, clustertest.Topology{
		Root: root(), Bin: binDir, Nodes: 1, Shards: 1, Crawlers: crawlers,
		Config: map[string]any{
			"politeness": map[string]any{"min_delay": "0s", "delay_factor": 0},
			"crawler":    map[string]any{"workers": workersPerCrawler, "resolve": web.Resolve(), "allow_private_networks": true},
			"frontier":   map[string]any{"filter": map[string]any{"capacity": 10_000_000}},
			"log":        map[string]any{"level": "warn"},
		},
	})
	defer c.Stop()
	c.Seed(web.Seeds())
	start := time.Now()
	var from msg.Status
	var fromAt time.Time
	var rate float64
	c.Watch(warmup+window+time.Minute, 200*time.Millisecond, func(s msg.Status) bool {
		switch {
		case fromAt.IsZero() && time.Since(start) >= warmup:
			from, fromAt = s, time.Now()
		case !fromAt.IsZero() && time.Since(fromAt) >= window:
			rate = float64(s.Done-from.Done) / time.Since(fromAt).Seconds()
			return true
		}
		return false
	})
	return rate
}

// BenchmarkScaling reports pages/s for 1, 2, 4 and 8 crawler processes,
// and each one's efficiency: pages/s / (n x the 1-crawler pages/s).
func BenchmarkScaling(b *testing.B) {
	var one float64
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("crawlers=%d", n), func(b *testing.B) {
			for b.Loop() {
				r := measure(b, n)
				if n == 1 {
					one = r
				}
				b.ReportMetric(r, "pages/s")
				if one > 0 {
					b.ReportMetric(r/(float64(n)*one), "efficiency")
				}
			}
		})
	}
}
