package synthweb

import (
	"io"
	"os"
	"sync/atomic"
	"testing"
)

// benchConfig is the end-to-end tests' size: 100 hosts x 200 pages.
func benchConfig() Config {
	c := DefaultConfig()
	c.Hosts = 100
	c.PagesPerHost = 200
	c.ErrorRate = 0
	c.MaxRecorded = 1 << 18
	return c
}

// BenchmarkServe measures requests served per second over loopback by 64
// concurrent clients fetching distinct pages of a 20,000-page web.
func BenchmarkServe(b *testing.B) {
	w := startWeb(b, benchConfig())
	urls := w.Reachable(TruthOptions{})
	c := w.Client()
	var next, bytes atomic.Int64
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			u := urls[int(next.Add(1))%len(urls)]
			resp, err := c.Get(u)
			if err != nil {
				b.Error(err)
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			bytes.Add(n)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.SetBytes(bytes.Load() / int64(b.N))
}

// BenchmarkRender measures generating one page: its links and its HTML.
func BenchmarkRender(b *testing.B) {
	cfg := benchConfig()
	g := newGraph(cfg.withDefaults())
	var buf []byte
	var links []link
	n := 0
	for i := 0; b.Loop(); i++ {
		p := page{host: int32(i % cfg.Hosts), kind: kindPage, n: int64(i % cfg.PagesPerHost)}
		links = g.links(p, links[:0])
		buf = g.renderPage(buf[:0], p, links, nil)
		n += len(buf)
	}
	b.SetBytes(int64(n / b.N))
}

// BenchmarkTruth measures the ground truth of the 20,000-page web.
func BenchmarkTruth(b *testing.B) {
	w := startWeb(b, benchConfig())
	var pages int
	for b.Loop() {
		pages = len(w.Truth(TruthOptions{}).Pages)
	}
	b.ReportMetric(float64(pages), "pages")
}

// TestSoakCrawl20k crawls the whole 20,000-page web politely with 100
// concurrent clients and checks the report. Run with TRAWL_SOAK=1.
func TestSoakCrawl20k(t *testing.T) {
	if os.Getenv("TRAWL_SOAK") == "" {
		t.Skip("set TRAWL_SOAK=1 to run")
	}
	cfg := benchConfig()
	cfg.ErrorRate = 0.02
	cfg.Trap = true
	w := startWeb(t, cfg)
	opts := ReportOptions{Truth: TruthOptions{MaxTrapDepth: 5}}
	want := w.Reachable(opts.Truth)
	if len(want) < 20_000 {
		t.Fatalf("only %d reachable urls", len(want))
	}
	politeCrawl(t, w, want, 0)
	r := w.Report(opts)
	if ps := r.Problems(); len(ps) != 0 {
		t.Fatalf("Problems() = %q", ps)
	}
	if r.Fetched != len(want) {
		t.Errorf("fetched %d of %d", r.Fetched, len(want))
	}
	t.Logf("%d urls, %d requests", len(want), r.Requests)
}
