package crawl

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/trawlhq/trawl/crawl"
	"github.com/trawlhq/trawl/internal/cli"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/synthweb"
)

const workers = 32

var timeline = flag.Bool("timeline", false, "log when trawl's requests reached the site, per 250 ms")

// cpuNanos is the CPU time the process has used (the site's server, which
// runs in the same process, included: the same for both crawlers).
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// site is the fast local site both crawlers get: 100 hosts x 400 pages, no
// robots rules, errors or private pages (Colly ignores robots.txt by
// default, so both crawl the same set).
func site(b *testing.B) *synthweb.Web {
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost = 100, 400
	wc.RobotsFraction, wc.ErrorRate, wc.PrivatePages, wc.PrivateLinkFraction = 0, 0, 0, 0
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		b.Fatal(err)
	}
	return web
}

func runColly(b *testing.B, web *synthweb.Web) (pages int64, d time.Duration) {
	var hosts []string
	for i := 0; i < web.Config().Hosts; i++ {
		hosts = append(hosts, synthweb.HostName(i))
	}
	c := colly.NewCollector(colly.Async(true), colly.AllowedDomains(hosts...))
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: workers}); err != nil {
		b.Fatal(err)
	}
	c.WithTransport(&http.Transport{DialContext: web.DialContext, MaxIdleConns: 1024, MaxIdleConnsPerHost: 2})
	var n atomic.Int64
	c.OnResponse(func(*colly.Response) { n.Add(1) })
	c.OnHTML("a[href]", func(e *colly.HTMLElement) { _ = e.Request.Visit(e.Attr("href")) })
	start := time.Now()
	for _, s := range web.Seeds() {
		// A seed may already have been reached through another one's links.
		var seen *colly.AlreadyVisitedError
		if err := c.Visit(s); err != nil && !errors.As(err, &seen) {
			b.Fatal(err)
		}
	}
	c.Wait()
	return n.Load(), time.Since(start)
}

func runTrawl(b *testing.B, web *synthweb.Web, inflight int) (pages int64, d time.Duration) {
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	cfg.Frontier.MetricsAddr = ""
	cfg.Frontier.MaxInflightPerHost = inflight
	cfg.Politeness.MinDelay, cfg.Politeness.DelayFactor = 0, 0
	cfg.Crawler.Workers = workers
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawler.Resolve = web.Resolve()
	cfg.Crawl.Seeds = web.Seeds()
	// As the crawler binary does (cli.TuneGC in its main); Colly runs
	// with the process's setting.
	defer debug.SetGCPercent(cli.TuneGC())
	start := time.Now()
	sum, err := crawl.Run(context.Background(), crawl.Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	if *timeline {
		rs := web.Requests()
		first, last := rs[0].Start, rs[len(rs)-1].Start
		var buckets [40]int
		for _, r := range rs {
			if i := int(r.Start.Sub(start) / (250 * time.Millisecond)); i < len(buckets) {
				buckets[i]++
			}
		}
		b.Logf("run %v: first request at %v, last at %v; per 250ms: %v", el, first.Sub(start), last.Sub(start), buckets)
	}
	return int64(sum.Fetched), el
}

// BenchmarkVsColly crawls the same site with both, one after the other, and
// reports each one's pages/s and trawl's ratio to Colly.
func BenchmarkVsColly(b *testing.B) {
	for b.Loop() {
		// measure runs one crawler over a fresh copy of the site and
		// returns its pages, wall time and process CPU time per page.
		measure := func(run func(*synthweb.Web) (int64, time.Duration)) (int64, time.Duration, float64) {
			web := site(b)
			defer web.Close()
			cpu := cpuNanos()
			p, d := run(web)
			return p, d, float64(cpuNanos()-cpu) / float64(p) / 1e3
		}
		cp, cd, ccpu := measure(func(w *synthweb.Web) (int64, time.Duration) { return runColly(b, w) })
		tp, td, tcpu := measure(func(w *synthweb.Web) (int64, time.Duration) { return runTrawl(b, w, 1) })
		tp4, td4, t4cpu := measure(func(w *synthweb.Web) (int64, time.Duration) { return runTrawl(b, w, 4) })
		colly, trawl, trawl4 := float64(cp)/cd.Seconds(), float64(tp)/td.Seconds(), float64(tp4)/td4.Seconds()
		b.ReportMetric(colly, "colly-pages/s")
		b.ReportMetric(trawl, "trawl-pages/s")
		b.ReportMetric(trawl4, "trawl-inflight4-pages/s")
		b.ReportMetric(trawl/colly, "trawl/colly")
		b.ReportMetric(trawl4/colly, "trawl4/colly")
		b.ReportMetric(ccpu, "colly-cpu-us/page")
		b.ReportMetric(t4cpu, "trawl4-cpu-us/page")
		b.Logf("colly %d pages in %v (%.0f cpu-us/page); trawl %d in %v (%.0f); trawl (4 in flight per host) %d in %v (%.0f)",
			cp, cd.Round(time.Millisecond), ccpu, tp, td.Round(time.Millisecond), tcpu, tp4, td4.Round(time.Millisecond), t4cpu)
	}
}

// BenchmarkTrawl is trawl's half alone (4 fetches in flight per host), for
// profiling: go test -run '^$' -bench Trawl -benchtime 1x -cpuprofile cpu.out ./crawl
func BenchmarkTrawl(b *testing.B) {
	for b.Loop() {
		web := site(b)
		cpu := cpuNanos()
		p, d := runTrawl(b, web, 4)
		cpu = cpuNanos() - cpu
		web.Close()
		b.ReportMetric(float64(p)/d.Seconds(), "pages/s")
		b.ReportMetric(float64(cpu)/float64(p)/1e3, "cpu-us/page")
	}
}
