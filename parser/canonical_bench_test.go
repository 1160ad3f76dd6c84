package parser

import "testing"

// benchURLs are typical outlinks of about 70 bytes, as found on real pages:
// most are already canonical, some need work (case, default port, escapes,
// fragments, dot segments, IDN).
var benchURLs = []string{
	"https://www.example-news.com/2026/12/02/world/europe/storm-coast.html",
	"https://docs.example.org/reference/api/v2/streams.html#method-close",
	"https://shop.example.com/category/shoes/running?page=2&sort=price_asc",
	"http://blog.example.net/posts/how-we-built-our-search-index-in-go/",
	"https://cdn.example-news.com/images/2026/12/02/storm-coast-1200x800.jpg",
	"https://www.example.com/search?q=distributed+web+crawler&lang=en&n=20",
	"https://Example.COM:443/Products/%7ESale/index.html?ref=home#top",
	"https://www.example-news.com/section/../world/asia/markets-close.html",
	"https://münchen.example.de/stadtplan/öffentlicher-verkehr/linien.html",
	"https://shop.example.com/p/trail-runner-gtx-men?color=black%2fgrey",
}

func benchmarkCanonical(b *testing.B, urls []string) {
	var n int
	for _, u := range urls {
		n += len(u)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Canonical(urls[i%len(urls)], 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/URL")
	b.SetBytes(int64(n / len(urls)))
}

// BenchmarkCanonical is the realistic mix above.
func BenchmarkCanonical(b *testing.B) { benchmarkCanonical(b, benchURLs) }

// BenchmarkCanonicalFast is already-canonical ASCII URLs only.
func BenchmarkCanonicalFast(b *testing.B) { benchmarkCanonical(b, benchURLs[:6]) }

// BenchmarkCanonicalFull forces the WHATWG path for the same URLs.
func BenchmarkCanonicalFull(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := canonicalFull(benchURLs[i%len(benchURLs)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/URL")
}

// BenchmarkCanonicalRules is the mix with every aggressive rule on.
func BenchmarkCanonicalRules(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Canonical(benchURLs[i%len(benchURLs)], AllRules); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/URL")
}

// BenchmarkCanonicalResolved is what the frontier receives: the same URLs
// as Extract emits them (WHATWG hrefs: host lowercased and punycoded, dot
// segments and default ports gone), so most take the fast path; the IDN
// host still takes the full one.
func BenchmarkCanonicalResolved(b *testing.B) {
	urls := make([]string, len(benchURLs))
	for i, u := range benchURLs {
		r, err := Resolve("", u)
		if err != nil {
			b.Fatal(err)
		}
		urls[i] = r
	}
	benchmarkCanonical(b, urls)
}
