package robots

import (
	"fmt"
	"strings"
	"testing"
)

// realistic50 is a 50-rule robots.txt shaped like a large site's: a "*"
// group of 40 rules (prefixes, wildcards, anchors, a few allows), two
// named groups and a sitemap.
func realistic50() []byte {
	var b strings.Builder
	b.WriteString("# robots.txt for a large site\nUser-agent: *\n")
	for i := range 25 {
		fmt.Fprintf(&b, "Disallow: /section%02d/private/\n", i)
	}
	for i := range 6 {
		fmt.Fprintf(&b, "Allow: /section%02d/private/public-%d/\n", i, i)
	}
	for _, p := range []string{"/*?sessionid=", "/*.pdf$", "/search*q=", "/*/print$", "/cgi-bin/", "/tmp/", "/*?sort=*&page=", "/account/*/edit"} {
		fmt.Fprintf(&b, "Disallow: %s\n", p)
	}
	b.WriteString("Crawl-delay: 1\n\nUser-agent: badbot\nDisallow: /\n\nUser-agent: trawl\nUser-agent: otherbot\n")
	for _, p := range []string{"/admin/", "/*.json$", "/api/", "/drafts/", "/*?preview=", "/cart", "/checkout/", "/login", "/logout"} {
		fmt.Fprintf(&b, "Disallow: %s\n", p)
	}
	b.WriteString("Allow: /api/public/\nSitemap: https://example.com/sitemap.xml\n")
	return []byte(b.String())
}

// benchPaths are 70-byte-ish paths of the kind the frontier admits.
var benchPaths = []string{
	"/section07/articles/2026/12/02/how-crawlers-decide-what-to-fetch-next",
	"/section03/private/public-3/report-2026-q4.html?lang=en&ref=homepage",
	"/products/widgets/blue-widget-large-edition?color=blue&sessionid=abc",
	"/search/results?q=robots+txt+matching&page=4&sort=relevance&ts=1234",
	"/section19/private/internal-notes/meeting-2026-11-30-minutes.pdf",
	"/blog/2026/11/30/a-long-title-for-a-blog-post-about-go-performance/",
	"/account/12345678/edit?tab=profile&return=%2Fhome%2Fdashboard%2F",
	"/docs/reference/api/v2/endpoints/list-all-the-things/index.html",
}

// BenchmarkTest measures one Test call (ns/op) on realistic50 with paths
// cycling through benchPaths.
func BenchmarkTest(b *testing.B) {
	r := Parse(realistic50())
	for _, agent := range []string{"somebot", "trawl", "Trawl"} {
		b.Run("agent="+agent, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r.Test(agent, benchPaths[i%len(benchPaths)])
			}
		})
	}
	b.Run("non-ascii-path", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Test("somebot", "/section07/articles/2026/12/02/crawler-überall-ünd-ça-marche")
		}
	})
}

func BenchmarkParse(b *testing.B) {
	body := realistic50()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(body)
	}
}
