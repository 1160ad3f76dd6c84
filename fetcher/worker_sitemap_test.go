package fetcher

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

// sitemapSite serves a robots.txt naming two sitemaps, a sitemap index,
// a gzipped urlset served as application/x-gzip, an RSS feed, an XML file
// that is no sitemap, and a urlset with no Content-Type.
func sitemapSite(t *testing.T) string {
	mux := http.NewServeMux()
	serve := func(path, ctype string, body []byte) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			}
			w.Write(body)
		})
	}
	serve("/robots.txt", "text/plain", []byte("User-agent: *\nDisallow: /private\nSitemap: /sitemap_index.xml\nsitemap: http://other.test/sm.xml\nSitemap: javascript:x\n"))
	serve("/sitemap_index.xml", "application/xml", []byte(`<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>/sm1.xml.gz</loc></sitemap></sitemapindex>`))
	serve("/sm1.xml.gz", "application/x-gzip", testsite.Gzip(t, []byte(`<urlset><url><loc>/p1</loc></url><url><loc>/p2?a=1&b=2</loc></url></urlset>`)))
	serve("/feed", "application/rss+xml", []byte(`<rss><channel><link>/</link><item><link>/post/1</link></item></channel></rss>`))
	serve("/note.xml", "text/xml", []byte(`<note><loc>/nope</loc></note>`))
	serve("/untyped", "", []byte(`<?xml version="1.0"?><urlset><url><loc>/u1</loc></url></urlset>`))
	site, _ := testsite.Start(t, mux)
	return site.URL
}

// TestWorkerSitemaps: robots.txt Sitemap: lines become links of the
// robots lease; sitemaps, indexes and feeds yield their URLs; other XML
// yields none. With sitemaps off, none of it.
func TestWorkerSitemaps(t *testing.T) {
	site := sitemapSite(t)
	want := map[string][]string{
		site + "/robots.txt":        {site + "/sitemap_index.xml", "http://other.test/sm.xml"},
		site + "/sitemap_index.xml": {site + "/sm1.xml.gz"},
		site + "/sm1.xml.gz":        {site + "/p1", site + "/p2?a=1&b=2"},
		site + "/feed":              {site + "/post/1"},
		site + "/untyped":           {site + "/u1"},
	}
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("sitemaps=%v", on), func(t *testing.T) {
			e := bustest.Start(t)
			natsCfg := config.Default().NATS
			front := startFrontier(t, bustest.Connect(t, e), natsCfg)
			deadline := time.Now().Add(time.Minute)
			paths := []string{"/robots.txt", "/sitemap_index.xml", "/sm1.xml.gz", "/feed", "/note.xml", "/untyped"}
			for i, p := range paths {
				front.add(0, msg.Lease{ID: uint64(i + 1), URL: site + p, Robots: p == "/robots.txt", Depth: 1, Deadline: deadline})
			}
			cfg := workerConfig(t.TempDir())
			cfg.Sitemaps = on
			w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: cfg, Subjects: msg.NewSubjects(natsCfg.Prefix), Shards: 1})
			if err != nil {
				t.Fatal(err)
			}
			cancel, wait := runWorker(w)
			got := front.collect(len(paths), 30*time.Second)
			cancel()
			if err := wait(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			links := map[string][]string{}
			found := map[string]uint32{}
			for _, r := range got {
				switch {
				case r.batch != nil:
					for _, l := range r.batch.Links {
						if l.Kind != 1 || l.NoFollow || r.batch.Depth != 1 {
							t.Errorf("link %+v from %s at depth %d, want navigation at depth 1", l, r.batch.Source, r.batch.Depth)
						}
						links[r.batch.Source] = append(links[r.batch.Source], l.URL)
					}
				case r.outcome != nil:
					if r.outcome.Status != 200 {
						t.Errorf("%s: status %d", r.outcome.URL, r.outcome.Status)
					}
					found[r.outcome.URL] = r.outcome.LinksFound
				}
			}
			exp := want
			if !on {
				exp = map[string][]string{}
			}
			if !reflect.DeepEqual(links, exp) {
				t.Errorf("links by source:\n got %q\nwant %q", links, exp)
			}
			if n, want := w.Stats().Sitemaps, map[bool]uint64{true: 4, false: 0}[on]; n != want {
				t.Errorf("%d sitemaps and feeds read, want %d (index, urlset, feed, untyped urlset)", n, want)
			}
			for src, ls := range exp {
				if found[src] != uint32(len(ls)) {
					t.Errorf("%s: outcome says %d links found, want %d", src, found[src], len(ls))
				}
			}
		})
	}
}

// TestWorkerSitemapMeta: a urlset's <lastmod> and <changefreq> ride on
// its links to a frontier that reads version 5 (msg.HeaderOutcomeV5),
// and are republished when the sitemap is read again even where the
// link cache would skip a link seen before (a newer lastmod is news); a
// frontier of the release before gets the links without them.
func TestWorkerSitemapMeta(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(`<urlset><url><loc>/a</loc><lastmod>2026-12-01T10:00:00Z</lastmod><changefreq>daily</changefreq></url><url><loc>/b</loc></url></urlset>`))
	})
	srv, _ := testsite.Start(t, mux)
	site := srv.URL
	lastmod := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, v5 := range []bool{true, false} {
		t.Run(fmt.Sprintf("v5=%v", v5), func(t *testing.T) {
			e := bustest.Start(t)
			natsCfg := config.Default().NATS
			front := startFrontier(t, bustest.Connect(t, e), natsCfg)
			front.outcomeV5, front.epoch = v5, "epoch-1"
			cfg := workerConfig(t.TempDir())
			cfg.Sitemaps = true
			w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: cfg, Subjects: msg.NewSubjects(natsCfg.Prefix), Shards: 1})
			if err != nil {
				t.Fatal(err)
			}
			cancel, wait := runWorker(w)
			defer func() {
				cancel()
				if err := wait(); err != nil {
					t.Fatalf("Run: %v", err)
				}
			}()
			for visit := 1; visit <= 2; visit++ {
				front.add(0, msg.Lease{ID: uint64(visit), URL: site + "/sitemap.xml", Depth: 1, Deadline: time.Now().Add(time.Minute)})
				var links []msg.Link
				for _, r := range front.collect(1, 30*time.Second) {
					if r.batch != nil {
						links = append(links, r.batch.Links...)
					}
					// The visit's digest goes only to a frontier that reads it.
					if r.outcome != nil && (r.outcome.Digest != 0) != v5 {
						t.Errorf("visit %d: outcome digest %x to a frontier reading v5: %v", visit, r.outcome.Digest, v5)
					}
				}
				want := []msg.Link{{URL: site + "/a", Kind: 1}, {URL: site + "/b", Kind: 1}}
				switch {
				case v5:
					want[0].LastMod, want[0].ChangeFreq = lastmod, 24*time.Hour
					if visit == 2 {
						want = want[:1] // /b, without meta, is in the link cache
					}
				case visit == 2:
					want = nil
				}
				if !reflect.DeepEqual(links, want) {
					t.Errorf("visit %d: links %+v, want %+v", visit, links, want)
				}
			}
		})
	}
}
