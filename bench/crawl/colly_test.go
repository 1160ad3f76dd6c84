package crawl

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/crawl"
	"github.com/trawlhq/trawl/internal/synthweb"
)

const workers = 32

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
		if err := c.Visit(s); err != nil {
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
	start := time.Now()
	sum, err := crawl.Run(context.Background(), crawl.Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	return int64(sum.Fetched), time.Since(start)
}

// BenchmarkVsColly crawls the same site with both, one after the other, and
// reports each one's pages/s and trawl's ratio to Colly.
func BenchmarkVsColly(b *testing.B) {
	for b.Loop() {
		web := site(b)
		cp, cd := runColly(b, web)
		web.Close()
		web = site(b)
		tp, td := runTrawl(b, web, 1)
		web.Close()
		web = site(b)
		tp4, td4 := runTrawl(b, web, 4)
		web.Close()
		colly, trawl, trawl4 := float64(cp)/cd.Seconds(), float64(tp)/td.Seconds(), float64(tp4)/td4.Seconds()
		b.ReportMetric(colly, "colly-pages/s")
		b.ReportMetric(trawl, "trawl-pages/s")
		b.ReportMetric(trawl4, "trawl-inflight4-pages/s")
		b.ReportMetric(trawl/colly, "trawl/colly")
		b.ReportMetric(trawl4/colly, "trawl4/colly")
		b.Logf("colly %d pages in %v; trawl %d in %v; trawl (4 in flight per host) %d in %v", cp, cd.Round(time.Millisecond), tp, td.Round(time.Millisecond), tp4, td4.Round(time.Millisecond))
	}
}
