package parser

import (
	"bytes"
	"os"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// benchPages are the testdata pages the extraction benchmarks run over,
// with the URL and Content-Type each is served with.
var benchPages = []benchPage{
	{"news_front.html", "https://www.example-news.com/", "text/html; charset=utf-8"},
	{"docs_page.html", "https://docs.example.org/3.4/library/streams.html", "text/html"},
	{"shop_listing.html", "https://shop.example.com/herren/laufschuhe/", "text/html; charset=UTF-8"},
	{"legacy_windows1252.html", "http://www.cafe-example.de/", "text/html"},
}

// benchPage is a page the extraction benchmarks read: a file under
// testdata/pages, its URL and Content-Type.
type benchPage struct{ file, url, ct string }

// realBenchPages are the pages captured from real sites (readRealPages),
// as served with a Content-Type that names no charset.
func realBenchPages(b *testing.B) []benchPage {
	var ps []benchPage
	for _, p := range readRealPages(b) {
		ps = append(ps, benchPage{"real/" + p.file, p.url, "text/html"})
	}
	return ps
}

// forBenchPages runs fn as a sub-benchmark for each testdata page, the
// hand-written ones and the real ones, with SetBytes and ReportAllocs set.
func forBenchPages(b *testing.B, fn func(b *testing.B, body []byte, url, ct string)) {
	for _, p := range append(benchPages[:len(benchPages):len(benchPages)], realBenchPages(b)...) {
		body, err := os.ReadFile("testdata/pages/" + p.file)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.file, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			fn(b, body, p.url, p.ct)
		})
	}
}

// BenchmarkExtract measures extraction throughput (MB/s) on the testdata
// pages, from bytes to resolved links.
func BenchmarkExtract(b *testing.B) {
	forBenchPages(b, func(b *testing.B, body []byte, url, ct string) {
		var links int
		for i := 0; i < b.N; i++ {
			pg, err := Extract(bytes.NewReader(body), url, ct, ExtractOptions{})
			if err != nil {
				b.Fatal(err)
			}
			links = len(pg.Links)
		}
		b.ReportMetric(float64(links), "links/page")
	})
}

// BenchmarkTokenizerBare is the floor for BenchmarkExtract: x/net/html's
// tokenizer alone, a bare Next loop over the same pages, doing nothing
// with the tokens. Extract's time over this one is its own overhead.
func BenchmarkTokenizerBare(b *testing.B) {
	forBenchPages(b, func(b *testing.B, body []byte, _, _ string) {
		for i := 0; i < b.N; i++ {
			z := html.NewTokenizer(bytes.NewReader(body))
			for z.Next() != html.ErrorToken {
			}
		}
	})
}

// BenchmarkExtractOverTokenizer runs Extract and a bare tokenizer loop
// alternately over the pages of a set in every iteration and reports
// Extract's time over the tokenizer's ("x-tokenizer"): what extraction
// costs beyond x/net/html's Next, steadier on a busy machine than the
// separate figures of BenchmarkExtract and BenchmarkTokenizerBare. Sets:
// the three large hand-written pages, and the real ones.
func BenchmarkExtractOverTokenizer(b *testing.B) {
	for _, set := range []struct {
		name  string
		pages []benchPage
	}{{"handwritten", benchPages[:3]}, {"real", realBenchPages(b)}} {
		type page struct {
			body []byte
			benchPage
		}
		var ps []page
		for _, p := range set.pages {
			body, err := os.ReadFile("testdata/pages/" + p.file)
			if err != nil {
				b.Fatal(err)
			}
			ps = append(ps, page{body, p})
		}
		b.Run(set.name, func(b *testing.B) {
			var tExtract, tBare time.Duration
			for i := 0; i < b.N; i++ {
				for _, p := range ps {
					start := time.Now()
					z := html.NewTokenizer(bytes.NewReader(p.body))
					for z.Next() != html.ErrorToken {
					}
					mid := time.Now()
					if _, err := Extract(bytes.NewReader(p.body), p.url, p.ct, ExtractOptions{}); err != nil {
						b.Fatal(err)
					}
					tExtract += time.Since(mid)
					tBare += mid.Sub(start)
				}
			}
			b.ReportMetric(tExtract.Seconds()/tBare.Seconds(), "x-tokenizer")
		})
	}
}

// benchStartTags returns the raw start tags (html.Tokenizer.Raw, copied)
// of every testdata page forBenchPages reads, in document order, and
// whether each page's bytes hold a NUL or CR (ctlReader.ctl).
func benchStartTags(b *testing.B) (tags [][][]byte, ctl []bool) {
	for _, p := range append(benchPages[:len(benchPages):len(benchPages)], realBenchPages(b)...) {
		body, err := os.ReadFile("testdata/pages/" + p.file)
		if err != nil {
			b.Fatal(err)
		}
		var page [][]byte
		z := html.NewTokenizer(bytes.NewReader(body))
		for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
			if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
				page = append(page, bytes.Clone(z.Raw()))
			}
		}
		tags = append(tags, page)
		ctl = append(ctl, bytes.IndexByte(body, 0) >= 0 || bytes.IndexByte(body, '\r') >= 0)
	}
	return tags, ctl
}

// BenchmarkTagRaw measures extractor.tagRaw alone, the per-tag step of
// Extract (name lookup, attribute scan, recording the references), over
// the start tags of every testdata page, tokenized beforehand. ns/tag is
// the time per start tag, most of which carry no link.
func BenchmarkTagRaw(b *testing.B) {
	tags, ctl := benchStartTags(b)
	var n, size int
	for _, page := range tags {
		n += len(page)
		for _, t := range page {
			size += len(t)
		}
	}
	x := getExtractor(ExtractOptions{MaxLinks: DefaultMaxLinks, MaxAttrLen: DefaultMaxAttrLen})
	defer putExtractor(x)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for p, page := range tags {
			tagPage(x, page, ctl[p])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/tag")
}

// tagPage runs x.tagRaw over the start tags of one page, from a clean
// extractor state; x.refs and x.arena then hold the page's references.
func tagPage(x *extractor, page [][]byte, ctl bool) {
	x.arena, x.refs, x.done, x.seenBase = x.arena[:0], x.refs[:0], false, false
	x.src.ctl = ctl
	for _, t := range page {
		x.tagRaw(t)
	}
}
