package crawl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// shopPages is how many normal pages the throttling shop links to.
const shopPages = 13

// throttledShop is one loopback host, shop.test, whose home page links
// first to the paths in throttled (answered with their status and
// Retry-After forever, "" for none), then to shopPages normal pages
// /page/N. It records the paths requested, in order.
type throttledShop struct {
	srv  *httptest.Server
	port string
	mu   struct {
		sync.Mutex
		paths []string // requested, in order
	}
}

type throttledPath struct {
	path       string
	status     int
	retryAfter string
}

func startThrottledShop(t *testing.T, throttled []throttledPath) *throttledShop {
	ts := &throttledShop{}
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.mu.Lock()
		ts.mu.paths = append(ts.mu.paths, r.URL.Path)
		ts.mu.Unlock()
		switch p := r.URL.Path; {
		case p == "/":
			w.Header().Set("Content-Type", "text/html")
			var b strings.Builder
			b.WriteString("<html><body>\n")
			for _, tp := range throttled {
				fmt.Fprintf(&b, "<a href=%q>throttled</a>\n", tp.path)
			}
			for i := range shopPages {
				fmt.Fprintf(&b, "<a href=\"/page/%d\">page %d</a>\n", i, i)
			}
			b.WriteString("</body></html>")
			fmt.Fprint(w, b.String())
		case strings.HasPrefix(p, "/page/"):
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<html><body><h1>%s</h1><a href=\"/\">home</a></body></html>", p)
		default:
			for _, tp := range throttled {
				if tp.path == p {
					if tp.retryAfter != "" {
						w.Header().Set("Retry-After", tp.retryAfter)
					}
					w.WriteHeader(tp.status)
					return
				}
			}
			http.NotFound(w, r) // robots.txt among them
		}
	}))
	t.Cleanup(ts.srv.Close)
	_, ts.port, _ = net.SplitHostPort(ts.srv.Listener.Addr().String())
	return ts
}

// config is the default configuration but for what the crawl of the
// shop on loopback needs (--min-delay 0 --allow-private-networks, the
// host resolved to the server), and a small filter and no metrics port,
// as hostileConfig has.
func (ts *throttledShop) config(t *testing.T) config.Config {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.MetricsAddr = ""
	cfg.Politeness.MinDelay = 0
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawler.Resolve = map[string]string{"shop.test:" + ts.port: ts.srv.Listener.Addr().String()}
	cfg.Crawl.Seeds = []string{"http://shop.test:" + ts.port + "/"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// counts is how many requests each path got, and how many normal pages
// were requested at least once.
func (ts *throttledShop) counts() (byPath map[string]int, pages int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	byPath = map[string]int{}
	for _, p := range ts.mu.paths {
		byPath[p]++
		if byPath[p] == 1 && strings.HasPrefix(p, "/page/") {
			pages++
		}
	}
	return byPath, pages
}

func (ts *throttledShop) order() string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return strings.Join(ts.mu.paths, " ")
}

// A host whose home page links to three search pages that answer 429
// with Retry-After: 2 forever and an API path that answers 503 forever,
// and to 13 normal pages: with the defaults (but min_delay 0) every
// normal page is fetched, each throttled URL is tried 1 + max_retries
// times and finished rate_limited or unavailable, the host is not given
// up, and the crawl ends by itself.
func TestRunThrottledPathsKeepHostsGoodPages(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole crawl paced by Retry-After and back-off (under a minute)")
	}
	ts := startThrottledShop(t, []throttledPath{
		{"/search/0", 429, "2"}, {"/search/1", 429, "2"}, {"/search/2", 429, "2"},
		{"/api/stock", 503, ""},
	})
	cfg := ts.config(t)
	const deadline = 4 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	sum, err := Run(ctx, Options{Config: cfg})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	fs := sum.Frontier
	byPath, pages := ts.counts()
	t.Logf("stop %q after %.1fs: %d of %d normal pages fetched; finished %v, hosts given up %d; requests in order: %s",
		sum.StopReason, sum.Seconds, pages, shopPages, fs.Finished, fs.HostsGivenUp, ts.order())
	if pages != shopPages {
		t.Errorf("%d of %d normal pages fetched, want all", pages, shopPages)
	}
	if sum.StopReason != StopDone {
		t.Fatalf("the crawl did not end by itself within %v (stop %q)", deadline, sum.StopReason)
	}
	attempts := 1 + cfg.Politeness.MaxRetries
	for _, p := range []string{"/search/0", "/search/1", "/search/2", "/api/stock"} {
		if byPath[p] != attempts {
			t.Errorf("%s: %d requests, want %d (1 + max_retries)", p, byPath[p], attempts)
		}
	}
	if fs.Finished["rate_limited"] != 3 || fs.Finished["unavailable"] != 1 || fs.Finished["host_gave_up"] != 0 || fs.HostsGivenUp != 0 {
		t.Errorf("finished %v, hosts given up %d; want rate_limited 3, unavailable 1, no host_gave_up, 0 hosts given up",
			fs.Finished, fs.HostsGivenUp)
	}
	if fs.Queued != 0 || fs.Leased != 0 || fs.Done != int64(fs.Admitted) {
		t.Errorf("accounting: admitted %d, done %d, queued %d, leased %d", fs.Admitted, fs.Done, fs.Queued, fs.Leased)
	}
}

// One path asking for a Retry-After of 999999999 s does not freeze its
// host: the host's other pages are all fetched long before the
// back-off cap (politeness.backoff_max, 10 minutes) runs out. The crawl
// is stopped once they are (the throttled URL's own retries then wait
// out its Retry-After, capped, and would take half an hour).
func TestRunHugeRetryAfterPausesHostBriefly(t *testing.T) {
	if testing.Short() {
		t.Skip("a crawl")
	}
	ts := startThrottledShop(t, []throttledPath{{"/search", 429, "999999999"}})
	cfg := ts.config(t)
	// Far below backoff_max, far above the seconds the pages take.
	const within = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, pages := ts.counts(); pages == shopPages {
					cancel()
					return
				}
			}
		}
	}()
	sum, err := Run(ctx, Options{Config: cfg})
	cancel()
	<-done
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	byPath, pages := ts.counts()
	t.Logf("stop %q after %.1fs: %d of %d normal pages fetched, /search %d requests; requests in order: %s",
		sum.StopReason, sum.Seconds, pages, shopPages, byPath["/search"], ts.order())
	if pages != shopPages {
		t.Errorf("%d of %d normal pages fetched within %v of a Retry-After: 999999999 on one path, want all", pages, shopPages, within)
	}
	if byPath["/search"] < 1 {
		t.Errorf("/search never requested: the test proves nothing")
	}
}
