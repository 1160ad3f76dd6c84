package extract

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/trawlhq/trawl/parser"
)

// pageSet is a set of testdata pages, with the URL each is served from.
type pageSet struct {
	name  string
	dir   string                       // under parser/testdata/pages
	pages []struct{ file, url string } // nil: listed in dir/urls.tsv
}

// pageSets: trawl's hand-written pages (see parser/testdata/README.md),
// and pages captured from real sites (pages/real).
var pageSets = []pageSet{
	{"handwritten", "", []struct{ file, url string }{
		{"news_front.html", "https://www.example-news.com/"},
		{"docs_page.html", "https://docs.example.org/3.4/library/streams.html"},
		{"shop_listing.html", "https://shop.example.com/herren/laufschuhe/"},
	}},
	{"real", "real", nil}, // listed in pages/real/urls.tsv
}

// page is a testdata page loaded for the benchmarks.
type page struct {
	file string
	body []byte
	raw  string
	u    *url.URL
}

// load reads every page of the set and returns them with their total size.
func (s pageSet) load(t testing.TB) (ps []page, total int64) {
	t.Helper()
	dir := filepath.Join("..", "..", "parser", "testdata", "pages", s.dir)
	list := s.pages
	if list == nil {
		tsv, err := os.ReadFile(filepath.Join(dir, "urls.tsv"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(tsv), "\n") {
			if file, url, ok := strings.Cut(line, "\t"); ok && line[0] != '#' {
				list = append(list, struct{ file, url string }{file, url})
			}
		}
	}
	for _, p := range list {
		b, err := os.ReadFile(filepath.Join(dir, p.file))
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(p.url)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, page{p.file, b, p.url, u})
		total += int64(len(b))
	}
	return ps, total
}

// extract runs trawl's extraction on p.
func (p page) extract(t testing.TB) *parser.Page {
	pg, err := parser.Extract(bytes.NewReader(p.body), p.raw, "text/html", parser.ExtractOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pg
}

// TestSameLinks: on every page, each a[href] link goquery (with net/url)
// and Colly find is among trawl's links, compared as canonical keys
// (net/url leaves non-ASCII query bytes raw where the WHATWG href
// percent-encodes them), so the extractors do comparable work.
func TestSameLinks(t *testing.T) {
	for _, set := range pageSets {
		ps, _ := set.load(t)
		for _, p := range ps {
			ours := map[string]bool{}
			for _, l := range p.extract(t).Links {
				k, err := parser.Canonical(l.URL, 0)
				if err != nil {
					t.Fatal(err)
				}
				ours[k] = true
			}
			gq, err := GoqueryLinks(p.body, p.u, "a[href]", "href")
			if err != nil {
				t.Fatal(err)
			}
			co, err := CollyLinks(p.body, p.u)
			if err != nil {
				t.Fatal(err)
			}
			if len(gq) == 0 || len(co) == 0 {
				t.Errorf("%s: goquery found %d links, Colly %d", p.file, len(gq), len(co))
			}
			for name, links := range map[string][]string{"goquery": gq, "colly": co} {
				for _, g := range links {
					if k, err := parser.Canonical(g, 0); err != nil || !ours[k] {
						t.Errorf("%s: %s found %s, trawl did not", p.file, name, g)
					}
				}
			}
			t.Logf("%s: goquery a[href] %d links, Colly %d, trawl %d (all kinds)", p.file, len(gq), len(co), len(ours))
		}
	}
}

// allSelector makes goquery look at the same elements trawl does.
const allSelector = "a[href], area[href], link[href], frame[src], iframe[src], img[src], source[src], script[src], video[src], audio[src], embed[src]"

// baselines are what trawl is compared with: goquery selecting a[href]
// with net/url resolution (the leanest DOM-based extraction), goquery
// selecting the elements trawl reads, and Colly's own OnHTML("a[href]")
// path (CollyLinks).
var baselines = []struct {
	name string
	run  func(p page) error
}{
	{"goquery-a-href", func(p page) error { _, err := GoqueryLinks(p.body, p.u, "a[href]", "href"); return err }},
	{"goquery-same-elements", func(p page) error { _, err := GoqueryLinks(p.body, p.u, allSelector, "href"); return err }},
	{"colly-a-href", func(p page) error { _, err := CollyLinks(p.body, p.u); return err }},
}

// BenchmarkExtract reports the MB/s of trawl and of each baseline on every
// page alone.
func BenchmarkExtract(b *testing.B) {
	for _, set := range pageSets {
		ps, _ := set.load(b)
		for _, p := range ps {
			b.Run("trawl/"+p.file, func(b *testing.B) {
				b.SetBytes(int64(len(p.body)))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					p.extract(b)
				}
			})
			for _, bl := range baselines {
				b.Run(bl.name+"/"+p.file, func(b *testing.B) {
					b.SetBytes(int64(len(p.body)))
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						if err := bl.run(p); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
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

// speedup runs ours and theirs alternately over every page of ps in each
// iteration and reports both throughputs and theirs' time over ours': on
// a loaded machine the two see the same contention, so the ratio is
// steadier than separate MB/s figures.
func speedup(b *testing.B, ps []page, total int64, oursName string, ours, theirs func(p page) error) {
	var tOurs, tTheirs time.Duration
	for i := 0; i < b.N; i++ {
		for _, p := range ps {
			to, tt := pair(i, func() {
				if err := ours(p); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if err := theirs(p); err != nil {
					b.Fatal(err)
				}
			})
			tOurs += to
			tTheirs += tt
		}
	}
	mbps := func(d time.Duration) float64 { return float64(total) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(tOurs), oursName+"-MB/s")
	b.ReportMetric(mbps(tTheirs), "baseline-MB/s")
	b.ReportMetric(tTheirs.Seconds()/tOurs.Seconds(), "speedup")
}

// BenchmarkSpeedup reports trawl's speedup over each baseline, per page
// set (hand-written and real pages).
func BenchmarkSpeedup(b *testing.B) {
	trawl := func(p page) error {
		_, err := parser.Extract(bytes.NewReader(p.body), p.raw, "text/html", parser.ExtractOptions{})
		return err
	}
	for _, set := range pageSets {
		ps, total := set.load(b)
		for _, bl := range baselines {
			b.Run(set.name+"/"+bl.name, func(b *testing.B) { speedup(b, ps, total, "trawl", trawl, bl.run) })
		}
	}
}

// BenchmarkSpeedupCeiling is BenchmarkSpeedup with x/net/html's bare
// tokenizer (a Next loop doing nothing with the tokens) in trawl's place:
// the speedup any extractor streaming over that tokenizer could reach
// against each baseline, since it has at least the tokenizer's cost.
func BenchmarkSpeedupCeiling(b *testing.B) {
	bare := func(p page) error {
		z := html.NewTokenizer(bytes.NewReader(p.body))
		for z.Next() != html.ErrorToken {
		}
		return nil
	}
	for _, set := range pageSets {
		ps, total := set.load(b)
		for _, bl := range baselines {
			b.Run(set.name+"/"+bl.name, func(b *testing.B) { speedup(b, ps, total, "tokenizer", bare, bl.run) })
		}
	}
}
