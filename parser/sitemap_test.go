package parser

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"
)

const sitemapURL = "https://example.com/sitemaps/sitemap.xml"

func gzipped(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestParseSitemap(t *testing.T) {
	for _, c := range []struct {
		name    string
		doc     string
		format  SitemapFormat
		urls    []string
		invalid int
	}{
		{
			name: "urlset with extensions",
			doc: "\ufeff" + `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc>
      https://example.com/a?x=1&amp;y=2
    </loc>
    <lastmod>2026-01-01</lastmod>
    <xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/a"/>
    <image:image><image:loc>https://example.com/a.jpg</image:loc></image:image>
  </url>
  <url><loc>https://example.com/b?q=1&r=2</loc></url>
  <url><loc>/relative/c</loc></url>
  <url><loc>javascript:alert(1)</loc></url>
  <url><loc><![CDATA[https://example.com/d]]></loc></url>
  <loc>https://example.com/not-in-a-url</loc>
</urlset>`,
			format:  SitemapURLSet,
			urls:    []string{"https://example.com/a?x=1&y=2", "https://example.com/de/a", "https://example.com/b?q=1&r=2", "https://example.com/relative/c", "https://example.com/d"},
			invalid: 1,
		},
		{
			name: "index",
			doc: `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://example.com/sitemap-1.xml.gz</loc><lastmod>2026-01-01</lastmod></sitemap>
  <sitemap><loc>sitemap-2.xml</loc></sitemap>
</sitemapindex>`,
			format: SitemapIndex,
			urls:   []string{"https://example.com/sitemap-1.xml.gz", "https://example.com/sitemaps/sitemap-2.xml"},
		},
		{
			name: "rss 2.0",
			doc: `<?xml version="1.0"?><rss version="2.0"><channel>
<title>t</title><link>https://example.com/</link>
<item><title>one</title><link>https://example.com/posts/1</link></item>
<item><link>https://example.com/posts/2</link><guid>x</guid></item>
</channel></rss>`,
			format: SitemapRSS,
			urls:   []string{"https://example.com/posts/1", "https://example.com/posts/2"},
		},
		{
			name: "rss 1.0",
			doc: `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
<channel rdf:about="https://example.com/"><link>https://example.com/</link></channel>
<item rdf:about="https://example.com/r1"><link>https://example.com/r1</link></item>
</rdf:RDF>`,
			format: SitemapRSS,
			urls:   []string{"https://example.com/r1"},
		},
		{
			name: "atom",
			doc: `<feed xmlns="http://www.w3.org/2005/Atom">
<link rel="self" href="https://example.com/feed"/>
<entry><link href="https://example.com/e1"/><link rel="edit" href="https://example.com/edit/1"/></entry>
<entry><link rel="alternate" type="text/html" href="/e2"/></entry>
</feed>`,
			format: SitemapAtom,
			urls:   []string{"https://example.com/e1", "https://example.com/e2"},
		},
		{
			name: "missing end tags",
			doc: `<urlset><url><loc>https://example.com/1</loc>
<url><loc>https://example.com/2</loc></urlset>`,
			format: SitemapURLSet,
			urls:   []string{"https://example.com/1", "https://example.com/2"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, gz := range []bool{false, true} {
				body := []byte(c.doc)
				if gz {
					body = gzipped(t, c.doc)
				}
				sm, err := ParseSitemap(bytes.NewReader(body), sitemapURL, SitemapOptions{})
				if err != nil {
					t.Fatalf("gzip %v: %v", gz, err)
				}
				if sm.Format != c.format || !slices.Equal(sm.URLs, c.urls) || sm.Invalid != c.invalid || sm.Truncated {
					t.Errorf("gzip %v: got %v %q invalid %d truncated %v\nwant %v %q invalid %d",
						gz, sm.Format, sm.URLs, sm.Invalid, sm.Truncated, c.format, c.urls, c.invalid)
				}
			}
		})
	}
}

// TestParseSitemapEncoding: a declared ISO-8859-1 sitemap gives the URL a
// browser would request (UTF-8, percent-encoded).
func TestParseSitemapEncoding(t *testing.T) {
	doc, err := charmap.ISO8859_1.NewEncoder().String(`<?xml version="1.0" encoding="ISO-8859-1"?>
<urlset><url><loc>https://example.com/caf` + "\u00e9" + `</loc></url></urlset>`)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := ParseSitemap(strings.NewReader(doc), sitemapURL, SitemapOptions{})
	if err != nil || !slices.Equal(sm.URLs, []string{"https://example.com/caf%C3%A9"}) {
		t.Fatalf("got %q, %v", sm.URLs, err)
	}
}

func TestParseSitemapNotSitemap(t *testing.T) {
	for _, doc := range []string{
		"",
		"   ",
		"<!doctype html><html><body><a href=/x>x</a></body></html>",
		`{"urlset": []}`,
		"https://example.com/1\nhttps://example.com/2\n", // a text sitemap: not read
		`<?xml version="1.0" encoding="x-unknown"?><urlset/>`,
	} {
		sm, err := ParseSitemap(strings.NewReader(doc), sitemapURL, SitemapOptions{})
		if !errors.Is(err, ErrNotSitemap) || sm == nil || len(sm.URLs) != 0 {
			t.Errorf("%q: %v, %+v; want ErrNotSitemap and no URLs", doc, err, sm)
		}
	}
}

// TestParseSitemapLimits: MaxURLs, MaxBytes (a gzip bomb) and the loc
// length cap; a document with exactly MaxURLs is not truncated.
func TestParseSitemapLimits(t *testing.T) {
	doc := numberedURLSet(5, "https://example.com/")
	for _, c := range []struct {
		max       int
		n         int
		truncated bool
	}{{3, 3, true}, {5, 5, false}, {6, 5, false}} {
		sm, err := ParseSitemap(strings.NewReader(doc), sitemapURL, SitemapOptions{MaxURLs: c.max})
		if err != nil || len(sm.URLs) != c.n || sm.Truncated != c.truncated {
			t.Errorf("MaxURLs %d: %d URLs, truncated %v, %v; want %d, %v", c.max, len(sm.URLs), sm.Truncated, err, c.n, c.truncated)
		}
	}

	// 64 MiB of whitespace inside the urlset compresses to about 64 KiB.
	bomb := "<urlset><url><loc>https://example.com/first</loc></url>" + strings.Repeat(" ", 64<<20) +
		"<url><loc>https://example.com/never</loc></url></urlset>"
	sm, err := ParseSitemap(bytes.NewReader(gzipped(t, bomb)), sitemapURL, SitemapOptions{MaxBytes: 1 << 20})
	if err != nil || !sm.Truncated || !slices.Equal(sm.URLs, []string{"https://example.com/first"}) {
		t.Errorf("gzip bomb: %q truncated %v, %v; want the first URL, truncated", sm.URLs, sm.Truncated, err)
	}

	long := "<urlset><url><loc>https://example.com/" + strings.Repeat("a", maxLocLen) + "</loc></url>" +
		"<url><loc>https://example.com/ok</loc></url></urlset>"
	sm, err = ParseSitemap(strings.NewReader(long), sitemapURL, SitemapOptions{})
	if err != nil || sm.Invalid != 1 || !slices.Equal(sm.URLs, []string{"https://example.com/ok"}) {
		t.Errorf("long loc: %q invalid %d, %v", sm.URLs, sm.Invalid, err)
	}
}

// numberedURLSet is a urlset of n URLs, prefix followed by 0 ... n-1.
func numberedURLSet(n int, prefix string) string {
	var b strings.Builder
	b.WriteString("<urlset>")
	for i := range n {
		fmt.Fprintf(&b, "<url><loc>%s%d</loc></url>", prefix, i)
	}
	b.WriteString("</urlset>")
	return b.String()
}

// TestParseSitemapBrokenOff: a document cut short (plain or gzipped)
// keeps the URLs read before the break and says why; a gzip stream
// corrupted midway gives an error and no URLs.
func TestParseSitemapBrokenOff(t *testing.T) {
	doc := numberedURLSet(2000, "https://example.com/page/")

	gz := gzipped(t, doc)
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"xml cut in half", []byte(doc[:len(doc)/2])},
		{"gzip cut in half", gz[:len(gz)/2]},
	} {
		sm, err := ParseSitemap(bytes.NewReader(c.body), sitemapURL, SitemapOptions{})
		if err == nil || errors.Is(err, ErrNotSitemap) || len(sm.URLs) < 100 || len(sm.URLs) >= 2000 {
			t.Errorf("%s: %d URLs, %v; want some and an error", c.name, len(sm.URLs), err)
		}
		for i, u := range sm.URLs {
			if want := fmt.Sprintf("https://example.com/page/%d", i); u != want {
				t.Fatalf("%s: URL %d = %q, want %q", c.name, i, u, want)
			}
		}
	}

	corrupt := slices.Clone(gz)
	for i := len(corrupt) / 2; i < len(corrupt)/2+64; i++ {
		corrupt[i] ^= 0x5a
	}
	sm, err := ParseSitemap(bytes.NewReader(corrupt), sitemapURL, SitemapOptions{})
	if err == nil || len(sm.URLs) != 0 {
		t.Errorf("corrupt gzip: %d URLs, %v; want none and an error", len(sm.URLs), err)
	}
}

// BenchmarkParseSitemap: a full sitemaps.org urlset (50,000 URLs, with
// lastmod and an hreflang alternate each, 7.9 MB), plain and gzipped.
func BenchmarkParseSitemap(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">` + "\n")
	for i := range DefaultSitemapMaxURLs / 2 {
		fmt.Fprintf(&sb, "  <url>\n    <loc>https://www.example.com/products/category-%d/item-%d.html?ref=sitemap&amp;v=2</loc>\n"+
			"    <lastmod>2026-11-%02dT10:00:00+00:00</lastmod>\n    <changefreq>weekly</changefreq>\n"+
			"    <xhtml:link rel=\"alternate\" hreflang=\"de\" href=\"https://www.example.com/de/products/category-%d/item-%d.html\"/>\n  </url>\n",
			i%97, i, i%28+1, i%97, i)
	}
	sb.WriteString("</urlset>\n")
	doc := []byte(sb.String())
	for _, c := range []struct {
		name string
		body []byte
	}{{"plain", doc}, {"gzip", gzipped(b, sb.String())}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				sm, err := ParseSitemap(bytes.NewReader(c.body), sitemapURL, SitemapOptions{})
				if err != nil || len(sm.URLs) != DefaultSitemapMaxURLs {
					b.Fatalf("%d URLs, %v", len(sm.URLs), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*DefaultSitemapMaxURLs), "ns/url")
		})
	}
}

// TestParseSitemapMeta: a <url>'s <lastmod> (each W3C datetime form,
// before or after <loc>) and <changefreq> go to each of its URLs, its
// alternates too; an index's <sitemap> keeps its <lastmod>; a URL
// without them, a date in no W3C form and an unknown word are zero; a
// document with none has no Meta.
func TestParseSitemapMeta(t *testing.T) {
	doc := `<urlset xmlns:xhtml="http://www.w3.org/1999/xhtml">
<url><lastmod>2026-12-01T10:30:15.25+02:00</lastmod><loc>/a</loc><changefreq> Weekly </changefreq>
  <xhtml:link rel="alternate" href="/a-de"/></url>
<url><loc>/b</loc></url>
<url><loc>/c</loc><lastmod>2026-11-02</lastmod><changefreq>never</changefreq></url>
<url><loc>/d</loc><lastmod>2026-11</lastmod><changefreq>sometimes</changefreq></url>
<url><loc>/e</loc><lastmod>2026-11-02T08:00Z</lastmod><changefreq>always</changefreq></url>
<url><loc>/f</loc><lastmod>02/11/2026</lastmod><changefreq>hourly</changefreq></url>
<url><loc>/g</loc><lastmod>1969-12-31</lastmod></url>
</urlset>`
	sm, err := ParseSitemap(strings.NewReader(doc), "https://h.test/sitemap.xml", SitemapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	want := []SitemapMeta{
		{time.Date(2026, 12, 1, 8, 30, 15, 250e6, time.UTC), 7 * day},
		{time.Date(2026, 12, 1, 8, 30, 15, 250e6, time.UTC), 7 * day},
		{},
		{time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), 365 * day},
		{time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 0},
		{time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC), time.Minute},
		{time.Time{}, time.Hour},
		{},
	}
	wantURLs := []string{"https://h.test/a", "https://h.test/a-de", "https://h.test/b", "https://h.test/c",
		"https://h.test/d", "https://h.test/e", "https://h.test/f", "https://h.test/g"}
	if !reflect.DeepEqual(sm.URLs, wantURLs) {
		t.Fatalf("URLs %v, want %v", sm.URLs, wantURLs)
	}
	if !reflect.DeepEqual(sm.Meta, want) {
		t.Errorf("meta\n got %v\nwant %v", sm.Meta, want)
	}
	idx := `<sitemapindex><sitemap><loc>/s1.xml</loc><lastmod>2026</lastmod></sitemap><sitemap><loc>/s2.xml</loc></sitemap></sitemapindex>`
	sm, err = ParseSitemap(strings.NewReader(idx), "https://h.test/", SitemapOptions{})
	if err != nil || len(sm.Meta) != 2 || !sm.Meta[0].LastMod.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || !sm.Meta[1].LastMod.IsZero() {
		t.Errorf("index meta %v, %v", sm.Meta, err)
	}
	sm, err = ParseSitemap(strings.NewReader(`<urlset><url><loc>/a</loc></url></urlset>`), "https://h.test/", SitemapOptions{})
	if err != nil || sm.Meta != nil {
		t.Errorf("a sitemap without lastmod: meta %v, %v", sm.Meta, err)
	}
}
