package extract

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trawlhq/trawl/parser"
	"golang.org/x/net/html"
)

// pages are trawl's hand-written test pages (see
// parser/testdata/README.md), with the URL each is served from.
var pages = []struct{ file, url string }{
	{"news_front.html", "https://www.example-news.com/"},
	{"docs_page.html", "https://docs.example.org/3.4/library/streams.html"},
	{"shop_listing.html", "https://shop.example.com/herren/laufschuhe/"},
}

func load(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "parser", "testdata", "pages", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSameLinks: on every page, each a[href] link goquery finds is among
// trawl's links, compared as canonical keys (net/url leaves non-ASCII
// query bytes raw where the WHATWG href percent-encodes them), so the two
// extractors do comparable work.
func TestSameLinks(t *testing.T) {
	for _, p := range pages {
		body := load(t, p.file)
		u, _ := url.Parse(p.url)
		gq, err := GoqueryLinks(body, u, "a[href]", "href")
		if err != nil {
			t.Fatal(err)
		}
		page, err := parser.Extract(bytes.NewReader(body), p.url, "text/html; charset=utf-8", parser.ExtractOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ours := map[string]bool{}
		for _, l := range page.Links {
			k, err := parser.Canonical(l.URL, 0)
			if err != nil {
				t.Fatal(err)
			}
			ours[k] = true
		}
		for _, g := range gq {
			if k, err := parser.Canonical(g, 0); err != nil || !ours[k] {
				t.Errorf("%s: goquery found %s, trawl did not", p.file, g)
			}
		}
		t.Logf("%s: goquery a[href] %d links, trawl %d links (all kinds)", p.file, len(gq), len(page.Links))
	}
}

// allSelector makes goquery look at the same elements trawl does.
const allSelector = "a[href], area[href], link[href], frame[src], iframe[src], img[src], source[src], script[src], video[src], audio[src], embed[src]"

func BenchmarkExtract(b *testing.B) {
	for _, p := range pages {
		body := load(b, p.file)
		u, _ := url.Parse(p.url)
		b.Run("trawl/"+p.file, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := parser.Extract(bytes.NewReader(body), p.url, "text/html; charset=utf-8", parser.ExtractOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("goquery-a/"+p.file, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := GoqueryLinks(body, u, "a[href]", "href"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("goquery-all/"+p.file, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := GoqueryLinks(body, u, allSelector, "href"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSpeedup runs trawl and goquery (a[href], as Colly's OnHTML
// does) alternately over all pages in every iteration and reports
// goquery's time over trawl's: on a loaded machine the two see the same
// contention, so the ratio is steadier than separate MB/s figures.
// page is a testdata page loaded for the speedup benchmarks.
type page struct {
	body []byte
	raw  string
	u    *url.URL
}

// loadPages loads every testdata page and returns them with their total size.
func loadPages(b *testing.B) (ps []page, total int64) {
	for _, p := range pages {
		body := load(b, p.file)
		u, _ := url.Parse(p.url)
		ps = append(ps, page{body, p.url, u})
		total += int64(len(body))
	}
	return ps, total
}

// pair times a and b on the same page, a first in even iterations and b
// first in odd ones: whichever runs first meets the page (and the cache
// the other one's garbage left) cold, so neither always gets the warm run.
func pair(i int, a, b func()) (ta, tb time.Duration) {
	timed := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	if i%2 == 0 {
		ta = timed(a)
		tb = timed(b)
	} else {
		tb = timed(b)
		ta = timed(a)
	}
	return ta, tb
}

func BenchmarkSpeedup(b *testing.B) {
	ps, total := loadPages(b)
	for _, sel := range []struct{ name, selector string }{{"a-href", "a[href]"}, {"same-elements", allSelector}} {
		b.Run(sel.name, func(b *testing.B) {
			var tTrawl, tGoquery time.Duration
			for i := 0; i < b.N; i++ {
				for _, p := range ps {
					tr, gq := pair(i, func() {
						if _, err := parser.Extract(bytes.NewReader(p.body), p.raw, "text/html; charset=utf-8", parser.ExtractOptions{}); err != nil {
							b.Fatal(err)
						}
					}, func() {
						if _, err := GoqueryLinks(p.body, p.u, sel.selector, "href"); err != nil {
							b.Fatal(err)
						}
					})
					tTrawl += tr
					tGoquery += gq
				}
			}
			sec := func(d time.Duration) float64 { return d.Seconds() }
			b.ReportMetric(float64(total)*float64(b.N)/sec(tTrawl)/1e6, "trawl-MB/s")
			b.ReportMetric(float64(total)*float64(b.N)/sec(tGoquery)/1e6, "goquery-MB/s")
			b.ReportMetric(sec(tGoquery)/sec(tTrawl), "speedup")
		})
	}
}

// BenchmarkSpeedupCeiling is BenchmarkSpeedup with x/net/html's bare
// tokenizer (a Next loop doing nothing with the tokens) in trawl's place:
// the speedup any extractor streaming over that tokenizer could reach
// against goquery, since it has at least the tokenizer's cost.
func BenchmarkSpeedupCeiling(b *testing.B) {
	ps, total := loadPages(b)
	var tBare, tGoquery time.Duration
	for i := 0; i < b.N; i++ {
		for _, p := range ps {
			tb, gq := pair(i, func() {
				z := html.NewTokenizer(bytes.NewReader(p.body))
				for z.Next() != html.ErrorToken {
				}
			}, func() {
				if _, err := GoqueryLinks(p.body, p.u, "a[href]", "href"); err != nil {
					b.Fatal(err)
				}
			})
			tBare += tb
			tGoquery += gq
		}
	}
	sec := func(d time.Duration) float64 { return d.Seconds() }
	b.ReportMetric(float64(total)*float64(b.N)/sec(tBare)/1e6, "tokenizer-MB/s")
	b.ReportMetric(float64(total)*float64(b.N)/sec(tGoquery)/1e6, "goquery-MB/s")
	b.ReportMetric(sec(tGoquery)/sec(tBare), "speedup")
}
