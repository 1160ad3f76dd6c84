package crawl

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/synthweb"
)

var statusScreenshot = flag.String("status-screenshot", "", "also save the status page's charts as this PNG (the README shows docs/status-page.png)")

// chromium finds a Chromium or Chrome binary. Without one the browser test
// skips, except in CI (CI=true), where .ci/run installs Debian's chromium
// and a missing browser is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary on PATH, and CI=true: the status page must be tested in a browser (.ci/run installs Debian's chromium)")
	}
	t.Skip("no chromium binary on PATH (apt-get install -y chromium): the status page's browser test is skipped")
	return ""
}

// chartStats is what the page's charts hold, measured by the browser.
type chartStats struct {
	Charts    int `json:"charts"`    // <svg class="chart">
	Series    int `json:"series"`    // <polyline class="series">
	MinPoints int `json:"minPoints"` // fewest vertices of a series
	Points    int `json:"points"`    // vertices of all series
	Drawn     int `json:"drawn"`     // series the browser laid out with a non-empty box
}

const chartStatsJS = `(() => {
	const lines = [...document.querySelectorAll("svg.chart polyline.series")];
	const n = lines.map(l => l.points.numberOfItems);
	return {
		charts: document.querySelectorAll("svg.chart").length,
		series: lines.length,
		minPoints: n.length ? Math.min(...n) : 0,
		points: n.reduce((a, b) => a + b, 0),
		drawn: lines.filter(l => { const b = l.getBBox(); return b.width > 0 && l.getTotalLength() > 0; }).length,
	};
})()`

// The status page of a running one-command crawl, opened in Chromium:
// its charts are drawn with data points, and a later look (the page
// reloads itself every 5 s, the history takes a point every 5 s) has more.
func TestStatusPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs a crawl for about 15 s")
	}
	browser := chromium(t)
	web := startWeb(t, 4, 800, 10*time.Millisecond)
	addr := freeLoopbackAddr(t)
	cfg := testConfig(t, web, t.TempDir())
	cfg.Frontier.MetricsAddr = addr
	cfg.Politeness.MinDelay = 50 * time.Millisecond // a crawl that outlasts the test's looks

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	crawlCtx, stopCrawl := context.WithCancel(ctx)
	defer stopCrawl()
	done := runAsync(crawlCtx, cfg)
	page := "http://" + addr + "/"
	for {
		resp, err := http.Get(page)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case r := <-done:
			t.Fatalf("the crawl ended before its status page answered: %v, %+v", r.err, r.sum)
		case <-ctx.Done():
			t.Fatalf("no status page at %s: %v", page, err)
		case <-time.After(50 * time.Millisecond):
		}
	}

	actx, stopAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1200, 1000))...)
	defer stopAlloc()
	bctx, stopBrowser := chromedp.NewContext(actx)
	defer stopBrowser()
	if err := chromedp.Do(bctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("chromium (%s) opening %s: %v", browser, page, err)
	}
	// look waits until the page's charts satisfy ok. The page reloads
	// itself: an evaluation that meets a navigation is tried again.
	look := func(what string, ok func(chartStats) bool) chartStats {
		var s chartStats
		var lastErr error
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			select {
			case r := <-done:
				t.Fatalf("the crawl ended (%v, stop %q) before the page showed %s", r.err, r.sum.StopReason, what)
			default:
			}
			s, lastErr = chromedp.Run(bctx, chromedp.Evaluate[chartStats](chartStatsJS))
			if lastErr == nil && ok(s) {
				return s
			}
		}
		t.Fatalf("the page never showed %s: last %+v, %v", what, s, lastErr)
		return s
	}
	first := look("charts with two points a series", func(s chartStats) bool {
		return s.Charts >= 7 && s.Series >= 12 && s.MinPoints >= 2 && s.Drawn == s.Series
	})
	t.Logf("first look: %+v", first)
	later := look("more points", func(s chartStats) bool { return s.Points > first.Points && s.Drawn == s.Series })
	t.Logf("later look: %+v", later)
	if *statusScreenshot != "" { // for the README: a longer history
		look("seven points a series", func(s chartStats) bool { return s.MinPoints >= 7 && s.Drawn == s.Series })
	}

	shot, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS("div.charts")))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	out := filepath.Join(t.TempDir(), "status-page.png")
	if *statusScreenshot != "" {
		out = *statusScreenshot
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the charts: %s (%d bytes)", out, len(shot))

	stopCrawl()
	if r := <-done; r.err != nil || r.sum.StopReason != StopInterrupted || r.sum.Fetched == 0 {
		t.Errorf("crawl: %v, stop %q, fetched %d", r.err, r.sum.StopReason, r.sum.Fetched)
	}
}

// freeLoopbackAddr is a loopback address with a port that was free a
// moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type runResult struct {
	sum *Summary
	err error
}

// runAsync runs the crawl of cfg in a goroutine; its result arrives on the
// channel.
func runAsync(ctx context.Context, cfg config.Config) <-chan runResult {
	return runOptsAsync(ctx, Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}})
}

// runOptsAsync is runAsync with all of Run's options.
func runOptsAsync(ctx context.Context, opts Options) <-chan runResult {
	done := make(chan runResult, 1)
	go func() {
		sum, err := Run(ctx, opts)
		done <- runResult{sum, err}
	}()
	return done
}

// startWeb serves a synthetic web of hosts x pages, each response after
// latency, until the test ends.
func startWeb(t *testing.T, hosts, pages int, latency time.Duration) *synthweb.Web {
	t.Helper()
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost, wc.Latency = hosts, pages, latency
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = web.Close() })
	return web
}
