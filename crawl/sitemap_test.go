package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// TestRunFollowsSitemaps: a site whose robots.txt names a sitemap index;
// the pages it lists are linked from nowhere. With sitemaps on (the
// default) the crawl fetches them; with sitemaps off it fetches only what
// links reach.
func TestRunFollowsSitemaps(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("sitemaps=%v", on), func(t *testing.T) {
			var (
				mu      sync.Mutex
				fetched []string
			)
			mux := http.NewServeMux()
			page := func(path, body string) {
				mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					fetched = append(fetched, r.URL.Path)
					mu.Unlock()
					w.Write([]byte(body))
				})
			}
			page("/robots.txt", "User-agent: *\nDisallow: /private/\nSitemap: /sitemap_index.xml\n")
			page("/", `<a href="/linked">linked</a>`)
			page("/linked", `<p>no links</p>`)
			page("/sitemap_index.xml", `<?xml version="1.0"?><sitemapindex><sitemap><loc>/sitemap-pages.xml</loc></sitemap></sitemapindex>`)
			page("/sitemap-pages.xml", `<?xml version="1.0"?><urlset>
<url><loc>/orphan-1</loc></url><url><loc>/orphan-2</loc></url><url><loc>/linked</loc></url><url><loc>/private/x</loc></url></urlset>`)
			page("/orphan-1", `<p>only in the sitemap</p>`)
			page("/orphan-2", `<p>only in the sitemap</p>`)
			site := httptest.NewServer(mux)
			defer site.Close()

			cfg := config.Default()
			cfg.DataDir = t.TempDir()
			cfg.Frontier.Filter.Capacity = 1000
			cfg.Frontier.MetricsAddr = ""
			cfg.Politeness.MinDelay = 0
			cfg.Politeness.DelayFactor = 0
			cfg.Crawler.AllowPrivateNetworks = true
			cfg.Crawler.Sitemaps = on
			cfg.Crawl.Seeds = []string{site.URL + "/"}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sum, err := Run(ctx, Options{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"/", "/linked", "/robots.txt"}
			if on {
				want = append(want, "/orphan-1", "/orphan-2", "/sitemap-pages.xml", "/sitemap_index.xml")
			}
			mu.Lock()
			got := slices.Sorted(slices.Values(fetched))
			mu.Unlock()
			slices.Sort(want)
			if wantMaps := map[bool]uint64{true: 2, false: 0}[on]; sum.Sitemaps != wantMaps {
				t.Errorf("summary: %d sitemaps read, want %d", sum.Sitemaps, wantMaps)
			}
			if sum.StopReason != StopDone || !slices.Equal(got, want) {
				t.Fatalf("stop %q, fetched %q\nwant each once: %q", sum.StopReason, got, want)
			}
		})
	}
}
