package crawl

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// hostileWeb is one loopback server that plays several hosts (told apart
// by the Host header), each a trap a real crawl meets:
//
//	ok.test        a home page linking to the traps below, and to pages
//	               of the hostile bodies the fetcher's tests already use
//	               (endless body, gzip bomb, endless headers, corrupt gzip)
//	  /limited     429 with Retry-After: 1, forever
//	  /inc/N       302 to /inc/N+1, forever
//	  /cal/Y/M     a calendar: links to the next and the previous month, forever
//	down.test      /down: 503 without Retry-After, forever (a host of its
//	               own: the back-off level is the host's, and after the
//	               429s of /limited it would start high)
//	pages429.test  robots.txt 404, every page 429 with Retry-After: 1
//	all429.test    everything, robots.txt included, 429 with Retry-After: 1
type hostileWeb struct {
	srv      *httptest.Server
	port     string
	requests sync.Map // host+path -> *atomic.Int64
	total    atomic.Int64
}

// pages429 is how many seeds the all-429 pages host gets.
const pages429 = 20

func startHostileWeb(t testing.TB) *hostileWeb {
	hw := &hostileWeb{}
	var bomb []byte
	{
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(bytes.Repeat([]byte(" "), 1<<20))
		zw.Close()
		bomb = bytes.Repeat(b.Bytes(), 64) // 64 MiB of spaces in ~64 KiB
	}
	hw.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.Host)
		hw.total.Add(1)
		n, _ := hw.requests.LoadOrStore(host+r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		switch host {
		case "all429.test":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		case "pages429.test":
			if r.URL.Path == "/robots.txt" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		p := r.URL.Path
		switch {
		case p == "/robots.txt":
			http.NotFound(w, r)
		case p == "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body>
<a href="/limited">limited</a>
<a href="/inc/0">chain</a> <a href="/cal/2026/12">calendar</a>
<a href="/endless-body">endless</a> <a href="/gzip-bomb">bomb</a>
<a href="/endless-headers">headers</a> <a href="/corrupt-gzip">corrupt</a>
</body></html>`)
		case p == "/limited":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case p == "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case strings.HasPrefix(p, "/inc/"):
			n, _ := strconv.Atoi(strings.TrimPrefix(p, "/inc/"))
			http.Redirect(w, r, fmt.Sprintf("/inc/%d", n+1), http.StatusFound)
		case strings.HasPrefix(p, "/cal/"):
			var y, m int
			if _, err := fmt.Sscanf(p, "/cal/%d/%d", &y, &m); err != nil {
				http.NotFound(w, r)
				return
			}
			ny, nm, py, pm := y, m+1, y, m-1
			if nm > 12 {
				ny, nm = y+1, 1
			}
			if pm < 1 {
				py, pm = y-1, 12
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<html><body><h1>%d-%02d</h1><a href="/cal/%d/%d">prev</a> <a href="/cal/%d/%d">next</a></body></html>`, y, m, py, pm, ny, nm)
		case p == "/endless-body":
			w.Header().Set("Content-Type", "text/html")
			chunk := bytes.Repeat([]byte("<p>endless</p>"), 1000)
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case p == "/gzip-bomb":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb)
		case p == "/corrupt-gzip":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write([]byte("this is not gzip at all"))
		case p == "/endless-headers":
			hj, ok := w.(http.Hijacker)
			if !ok {
				return
			}
			c, _, err := hj.Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			c.Write([]byte("HTTP/1.1 200 OK\r\n"))
			line := []byte("X-Endless: " + strings.Repeat("a", 1000) + "\r\n")
			for {
				if _, err := c.Write(line); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hw.srv.Close)
	_, hw.port, _ = net.SplitHostPort(hw.srv.Listener.Addr().String())
	return hw
}

// url is http://host:port/path on the hostile web.
func (hw *hostileWeb) url(host, path string) string {
	return "http://" + host + ":" + hw.port + path
}

// count is how many requests host+path got.
func (hw *hostileWeb) count(host, path string) int64 {
	if n, ok := hw.requests.Load(host + path); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// countPrefix is how many requests went to paths of host under prefix.
func (hw *hostileWeb) countPrefix(host, prefix string) (paths int, requests int64) {
	hw.requests.Range(func(k, v any) bool {
		if strings.HasPrefix(k.(string), host+prefix) {
			paths++
			requests += v.(*atomic.Int64).Load()
		}
		return true
	})
	return paths, requests
}

// hostileConfig is the default configuration, but for what a test on
// loopback needs: private addresses allowed, a short min_delay, a small
// filter, the hosts resolved to the server, no metrics port.
func hostileConfig(t testing.TB, hw *hostileWeb, dir string) config.Config {
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.MetricsAddr = ""
	cfg.Politeness.MinDelay = 10 * time.Millisecond
	cfg.Crawler.AllowPrivateNetworks = true
	addr := hw.srv.Listener.Addr().String()
	cfg.Crawler.Resolve = map[string]string{}
	for _, h := range []string{"ok.test", "down.test", "pages429.test", "all429.test", "chain.test", "cal.test"} {
		cfg.Crawler.Resolve[h+":"+hw.port] = addr
	}
	cfg.Crawl.Seeds = []string{hw.url("ok.test", "/"), hw.url("down.test", "/down"), hw.url("all429.test", "/")}
	for i := range pages429 {
		cfg.Crawl.Seeds = append(cfg.Crawl.Seeds, hw.url("pages429.test", fmt.Sprintf("/p/%d", i)))
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// peakHeap samples the Go heap every 20 ms until stop is called, and
// returns the largest HeapAlloc seen.
func peakHeap() (stop func() uint64) {
	done := make(chan struct{})
	var peak atomic.Uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// The hostile-site suite: a one-command crawl with default settings of a
// web made of traps ends by itself, accounts for every URL it admitted,
// and keeps its heap bounded. The slow servers of the fetcher's tests
// (slow headers, slow body) are left out: they end by the rule endless
// headers show here (no answer: failed after 1 + max_retries attempts),
// but each attempt costs up to header_timeout or fetch_timeout and then
// delay_factor times that before the next (150 s measured for slow
// headers with the defaults).
func TestRunHostileSitesEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole crawl of traps (about a minute)")
	}
	hw := startHostileWeb(t)
	cfg := hostileConfig(t, hw, t.TempDir())
	// Generous: the slowest trap is /down, 503 without Retry-After, whose
	// back-offs (5 s, 10 s, 20 s with up to 25% jitter) take under a
	// minute with the defaults.
	const deadline = 4 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	stopHeap := peakHeap()
	sum, err := Run(ctx, Options{Config: cfg})
	peak := stopHeap()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	fs := sum.Frontier
	t.Logf("stop %q after %.1fs, %d requests, peak heap %d MiB; frontier: admitted %d, done %d, queued %d, leased %d, rejected %v, outcomes %v",
		sum.StopReason, sum.Seconds, hw.total.Load(), peak>>20, fs.Admitted, fs.Done, fs.Queued, fs.Leased, fs.Rejected, fs.Outcomes)
	if sum.StopReason != StopDone {
		_, inc := hw.countPrefix("ok.test", "/inc/")
		calPaths, _ := hw.countPrefix("ok.test", "/cal/")
		t.Fatalf("the crawl did not end by itself within %v (stop %q): %d requests, /limited %d, /down %d, pages429.test %d, redirect hops %d, calendar months %d",
			deadline, sum.StopReason, hw.total.Load(), hw.count("ok.test", "/limited"), hw.count("down.test", "/down"),
			func() int64 { _, n := hw.countPrefix("pages429.test", "/p/"); return n }(), inc, calPaths)
	}
	// Every URL admitted is finished: nothing is left queued or leased.
	if fs.Queued != 0 || fs.Leased != 0 || fs.Done != int64(fs.Admitted) {
		t.Errorf("accounting: admitted %d, done %d, queued %d, leased %d", fs.Admitted, fs.Done, fs.Queued, fs.Leased)
	}
	// Every link received is admitted, a duplicate, robots-denied or
	// rejected by a named rule.
	var rejected uint64
	for r, n := range fs.Rejected {
		if r != "robots_unavailable" { // admitted, then finished: not a link rule
			rejected += n
		}
	}
	skipped := fs.Audit.FPSkips - fs.Audit.Rescued
	if got := fs.Admitted + fs.Duplicates + fs.RobotsDenied + rejected + skipped; got != fs.LinksReceived {
		t.Errorf("links received %d, but admitted %d + duplicates %d + robots denied %d + rejected %d + fp skips %d = %d",
			fs.LinksReceived, fs.Admitted, fs.Duplicates, fs.RobotsDenied, rejected, skipped, got)
	}
	// Done by reason adds up, and every trap ended by its rule.
	var finished uint64
	for _, n := range fs.Finished {
		finished += n
	}
	if finished != uint64(fs.Done) {
		t.Errorf("finished by reason %v adds up to %d, done %d", fs.Finished, finished, fs.Done)
	}
	attempts := int64(1 + cfg.Politeness.MaxRetries)
	// /limited alone: the pages429.test URLs are given up first, since
	// a throttled URL's retry waits behind the host's other URLs, so its
	// first host_give_up requests go to as many distinct URLs.
	const wantLimited = 1
	if n := hw.count("ok.test", "/limited"); n != attempts || fs.Finished["rate_limited"] != wantLimited {
		t.Errorf("429 forever: %d requests, finished rate_limited %d, want %d and %d", n, fs.Finished["rate_limited"], attempts, wantLimited)
	}
	if n := hw.count("down.test", "/down"); n != attempts || fs.Finished["unavailable"] != 1 {
		t.Errorf("503 forever: %d requests, finished unavailable %d, want %d and 1", n, fs.Finished["unavailable"], attempts)
	}
	if _, n := hw.countPrefix("pages429.test", "/p/"); n > int64(cfg.Politeness.HostGiveUp) ||
		fs.Finished["host_gave_up"] == 0 || fs.HostsGivenUp != 1 {
		t.Errorf("host answering 429: %d requests, finished host_gave_up %d, hosts given up %d; want at most %d, some, 1",
			n, fs.Finished["host_gave_up"], fs.HostsGivenUp, cfg.Politeness.HostGiveUp)
	}
	if fs.Finished["robots_unavailable"] != 1 {
		t.Errorf("host answering 429 to robots.txt too: finished robots_unavailable %d, want 1", fs.Finished["robots_unavailable"])
	}
	if _, n := hw.countPrefix("ok.test", "/inc/"); n > int64(cfg.Scope.MaxRedirects+1) || fs.Rejected["redirect_chain"] != 1 {
		t.Errorf("redirect chain: %d requests, rejected %d", n, fs.Rejected["redirect_chain"])
	}
	// Both ways from the entry month: next and previous months, each to max_depth.
	if paths, _ := hw.countPrefix("ok.test", "/cal/"); paths > 2*cfg.Scope.MaxDepth || fs.Rejected["max_depth"] == 0 {
		t.Errorf("calendar: %d months fetched, rejected max_depth %d", paths, fs.Rejected["max_depth"])
	}
	// The summary says what was given up.
	var text bytes.Buffer
	if err := sum.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"URLs given up without a page", "host_gave_up", "rate_limited", "unavailable", "1 hosts given up"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, text.String())
		}
	}
	// The heap stays far below what the hostile bodies would take.
	if peak > 512<<20 {
		t.Errorf("peak heap %d MiB, want under 512 MiB", peak>>20)
	}
}

// The traps of failure 7 alone, each on a host of its own: a redirect
// chain /inc/N -> /inc/N+1 and a calendar whose months link to the next.
// With the defaults both end: the chain at scope.max_redirects hops, the
// calendar at scope.max_depth.
func TestRunRedirectChainAndCalendarEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole crawl of traps")
	}
	hw := startHostileWeb(t)
	cfg := hostileConfig(t, hw, t.TempDir())
	cfg.Crawl.Seeds = []string{hw.url("chain.test", "/inc/0"), hw.url("cal.test", "/cal/2026/12")}
	const deadline = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	sum, err := Run(ctx, Options{Config: cfg})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	hops, _ := hw.countPrefix("chain.test", "/inc/")
	months, _ := hw.countPrefix("cal.test", "/cal/")
	fs := sum.Frontier
	t.Logf("stop %q after %.1fs: %d redirect hops, %d calendar months; rejected %v", sum.StopReason, sum.Seconds, hops, months, fs.Rejected)
	if sum.StopReason != StopDone {
		t.Fatalf("the crawl did not end by itself within %v (stop %q): %d requests, %d redirect hops followed, %d calendar months",
			deadline, sum.StopReason, hw.total.Load(), hops, months)
	}
	if hops > cfg.Scope.MaxRedirects+1 || fs.Rejected["redirect_chain"] != 1 {
		t.Errorf("redirect chain: %d URLs fetched, rejected %d, want %d and 1", hops, fs.Rejected["redirect_chain"], cfg.Scope.MaxRedirects+1)
	}
	// The entry month and max_depth months each way (next and previous).
	if months > 2*cfg.Scope.MaxDepth+1 || fs.Rejected["max_depth"] == 0 {
		t.Errorf("calendar: %d months fetched, max_depth rejected %d, want at most %d and some", months, fs.Rejected["max_depth"], 2*cfg.Scope.MaxDepth+1)
	}
}
