package crawl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/parser"
)

// TestDroppedLinksCounted: a page with 20 links of 100 KB and a page with
// 37 links past scope.max_links_per_page (10,000, the default): both
// numbers appear exactly, as rejected url_too_long and links_per_page, in
// /status.json and the frontier's and the crawler's metrics while the
// crawl runs, and in the summary at its end. Before, the crawler's parser
// dropped both silently: 0 and 0 everywhere.
func TestDroppedLinksCounted(t *testing.T) {
	const tooLong, overCap = 20, 37
	release := make(chan struct{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<a href=/long>long</a> <a href=/many>many</a> <a href=/hold>hold</a>`)
		case "/long":
			for i := range tooLong {
				fmt.Fprintf(w, `<a href="/%d-%s">x</a>`+"\n", i, strings.Repeat("a", 100<<10))
			}
			fmt.Fprint(w, `<a href="/">home</a>`)
		case "/many":
			for i := range parser.DefaultMaxLinks + overCap {
				fmt.Fprintf(w, "<a href=http://elsewhere.test/%d>x</a>\n", i) // off the seed hosts: rejected, never fetched
			}
		case "/hold": // keeps the crawl running until the counters were read
			select {
			case <-release:
			case <-r.Context().Done():
			}
			fmt.Fprint(w, "<p>held")
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.MetricsAddr = freeLoopbackAddr(t)
	cfg.Frontier.MaxInflightPerHost = 4 // /hold must not keep /long and /many waiting
	cfg.Politeness.MinDelay, cfg.Politeness.DelayFactor = 0, 0
	cfg.Crawler.Workers = 4
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawl.Seeds = []string{site.URL + "/"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan runResult, 1)
	go func() {
		sum, err := Run(ctx, Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}})
		done <- runResult{sum, err}
	}()

	base := "http://" + cfg.Frontier.MetricsAddr
	var st msg.Status
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var doc struct {
			Total msg.Status `json:"total"`
		}
		if b, err := get(base + "/status.json"); err == nil && json.Unmarshal(b, &doc) == nil {
			st = doc.Total
		}
		// /, /long and /many done: their outcomes, and the counts they
		// carry, are applied.
		if st.Done >= 3 || time.Now().After(deadline) {
			break
		}
	}
	if got := [2]uint64{st.Rejected["url_too_long"], st.Rejected["links_per_page"]}; got != [2]uint64{tooLong, overCap} {
		t.Errorf("/status.json: rejected url_too_long %d, links_per_page %d (done %d); want %d, %d", got[0], got[1], st.Done, tooLong, overCap)
	}
	metrics, err := get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name, reason string
		want         int
	}{
		{"trawl_frontier_rejected_total", "url_too_long", tooLong},
		{"trawl_frontier_rejected_total", "links_per_page", overCap},
		{"trawl_crawler_links_dropped_total", "url_too_long", tooLong},
		{"trawl_crawler_links_dropped_total", "links_per_page", overCap},
	} {
		if got := metricValue(metrics, m.name, m.reason); got != fmt.Sprint(m.want) {
			t.Errorf("metrics: %s{reason=%q} = %q, want %d", m.name, m.reason, got, m.want)
		}
	}

	close(release)
	released = true
	var res runResult
	select {
	case res = <-done:
	case <-ctx.Done():
		t.Fatal("the crawl did not end")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	fs := res.sum.Frontier
	if fs.Rejected["url_too_long"] != tooLong || fs.Rejected["links_per_page"] != overCap {
		t.Errorf("summary: rejected url_too_long %d, links_per_page %d; want %d, %d", fs.Rejected["url_too_long"], fs.Rejected["links_per_page"], tooLong, overCap)
	}
	var text bytes.Buffer
	if err := res.sum.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("rejected (url_too_long) %d", tooLong), fmt.Sprintf("rejected (links_per_page) %d", overCap)} {
		if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), want) {
			t.Errorf("summary text lacks %q:\n%s", want, text.String())
		}
	}
}

// get returns the body of a GET of url.
func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", url, resp.Status)
	}
	return b.Bytes(), err
}

// metricValue returns the value of the sample of metric name whose
// reason label is reason in a Prometheus text exposition, or "".
func metricValue(exposition []byte, name, reason string) string {
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, `reason="`+reason+`"`) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}
