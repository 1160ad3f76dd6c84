package parser

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkExtract measures extraction throughput (MB/s) on the testdata
// pages, from bytes to resolved links.
func BenchmarkExtract(b *testing.B) {
	for _, p := range []struct{ file, url, ct string }{
		{"news_front.html", "https://www.example-news.com/", "text/html; charset=utf-8"},
		{"docs_page.html", "https://docs.example.org/3.4/library/streams.html", "text/html"},
		{"shop_listing.html", "https://shop.example.com/herren/laufschuhe/", "text/html; charset=UTF-8"},
		{"legacy_windows1252.html", "http://www.cafe-example.de/", "text/html"},
	} {
		body, err := os.ReadFile("testdata/pages/" + p.file)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.file, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var links int
			for i := 0; i < b.N; i++ {
				pg, err := Extract(bytes.NewReader(body), p.url, p.ct, ExtractOptions{})
				if err != nil {
					b.Fatal(err)
				}
				links = len(pg.Links)
			}
			b.ReportMetric(float64(links), "links/page")
		})
	}
}
