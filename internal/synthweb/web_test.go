package synthweb

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// allURLs lists every URL of the truth a crawler could request, plus each
// host's robots.txt and static files, in a fixed order.
func allURLs(w *Web) []string {
	tr := w.Truth(TruthOptions{MaxTrapDepth: 2})
	var urls []string
	for h := range w.Config().Hosts {
		urls = append(urls, w.URL(h, "/robots.txt"), w.URL(h, "/static/site.css"), w.URL(h, "/static/logo.png"))
	}
	for _, l := range [][]string{tr.Pages, tr.Redirects, tr.Broken, tr.Disallowed, tr.TrapBeyond} {
		urls = append(urls, l...)
	}
	return urls
}

func TestDeterministic(t *testing.T) {
	cfg := smallConfig()
	a, b := startWeb(t, cfg), startWeb(t, cfg)
	ca, cb := a.Client(), b.Client()
	urls := allURLs(a)
	if got, want := strings.Join(urls, "\n"), strings.Join(allURLs(b), "\n"); got != want {
		t.Fatal("two webs of one config have different truths")
	}
	for round := range 3 { // error pages change answer across rounds
		for _, u := range urls {
			ra, rb := get(t, ca, u), get(t, cb, u)
			if ra != rb {
				t.Fatalf("round %d %s: web A answered %d %q (%d bytes), web B %d %q (%d bytes)",
					round, u, ra.status, ra.location, len(ra.body), rb.status, rb.location, len(rb.body))
			}
		}
	}

	cfg.Seed++
	other := startWeb(t, cfg)
	u := a.URL(0, "/p/3")
	if get(t, ca, u).body == get(t, other.Client(), u).body {
		t.Errorf("seeds %d and %d serve the same %s", cfg.Seed-1, cfg.Seed, u)
	}
}

// TestGolden pins the bytes of a few URLs, so that a change to the
// generator (which would silently change every benchmark's site) is seen.
func TestGolden(t *testing.T) {
	w := startWeb(t, smallConfig())
	c := w.Client()
	var got bytes.Buffer
	for _, path := range []string{"/", "/p/7", "/private/1", "/cal/2026/12", "/robots.txt"} {
		for h := range 2 {
			r := get(t, c, w.URL(h, path))
			got.WriteString("== " + w.URL(h, path) + " " + http.StatusText(r.status) + " " + r.location + "\n" + r.body)
		}
	}
	file := filepath.Join("testdata", "golden.txt")
	if *update {
		if err := os.WriteFile(file, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("served bytes differ from %s; if the change is intended, bump GeneratorVersion and run go test -run Golden -update", file)
	}
}

func TestResponses(t *testing.T) {
	cfg := smallConfig()
	cfg.CrawlDelay = 1500 * time.Millisecond
	w := startWeb(t, cfg)
	c := w.Client()
	tr := w.Truth(TruthOptions{})
	if len(tr.Redirects) == 0 || len(tr.Disallowed) == 0 || len(tr.Broken) == 0 {
		t.Fatalf("config lacks a feature: %d redirects, %d disallowed, %d broken",
			len(tr.Redirects), len(tr.Disallowed), len(tr.Broken))
	}
	disallowing, allowing := -1, -1
	for h := range cfg.Hosts {
		if w.Disallowed(w.URL(h, "/private/0")) {
			disallowing = h
		} else {
			allowing = h
		}
	}
	if disallowing < 0 || allowing < 0 {
		t.Fatalf("RobotsFraction 0.5 of 4 hosts: disallowing %d, allowing %d", disallowing, allowing)
	}
	redirect := tr.Redirects[0]
	// The redirect's target is the next page of the chain.
	var next string
	if i := strings.LastIndexByte(redirect, '/'); i > 0 {
		v := atoi(redirect[i+1:])
		next = redirect[:i+1] + itoa(v+1)
		if v+1 == cfg.PagesPerHost {
			next = redirect[:strings.Index(redirect, "/p/")] + "/"
		}
	}

	p0, p1, p2 := itoa(plainPage(t, w, 0, 3)), itoa(plainPage(t, w, 1, 3)), itoa(plainPage(t, w, 2, 3))
	tests := []struct {
		name        string
		url         string
		host        string // Host header override
		method      string
		status      int
		ctype       string
		contains    []string
		notContains []string
	}{
		{name: "home", url: w.URL(1, "/"), status: 200, ctype: "text/html; charset=utf-8",
			contains: []string{`<a href="/p/1">`, `<a href="/private/0">`, `<a href="/cal/2026/12">`, `<img src="/static/logo.png"`, `rel="canonical" href="http://h1.sim.test/"`}},
		{name: "page", url: w.URL(2, "/p/"+p2), status: 200, contains: []string{`<a href="/p/` + itoa(atoi(p2)+1) + `">Next</a>`, `<a href="/">Home</a>`}},
		{name: "last page has no next", url: w.URL(0, "/p/24"), status: 200, notContains: []string{`href="/p/25"`}},
		{name: "private", url: w.URL(0, "/private/1"), status: 200, contains: []string{`href="/private/2"`}},
		{name: "last private", url: w.URL(0, "/private/2"), status: 200, notContains: []string{`href="/private/3"`}},
		{name: "robots disallowing", url: w.URL(disallowing, "/robots.txt"), status: 200, ctype: "text/plain; charset=utf-8",
			contains: []string{"User-agent: *\nDisallow: /private/\nCrawl-delay: 1.5\n"}},
		{name: "robots allowing", url: w.URL(allowing, "/robots.txt"), status: 200,
			contains: []string{"User-agent: *\nDisallow:\nCrawl-delay: 1.5\n"}},
		{name: "calendar", url: w.URL(3, "/cal/2027/12"), status: 200, contains: []string{`href="/cal/2028/1"`}},
		{name: "calendar far", url: w.URL(3, "/cal/999999/3"), status: 200, contains: []string{`href="/cal/999999/4"`}},
		{name: "before the calendar", url: w.URL(3, "/cal/2026/11"), status: 404},
		{name: "bad month", url: w.URL(3, "/cal/2027/13"), status: 404},
		{name: "static css", url: w.URL(0, "/static/site.css"), status: 200, ctype: "text/css; charset=utf-8"},
		{name: "static png", url: w.URL(0, "/static/logo.png"), status: 200, ctype: "image/png"},
		{name: "page zero is spelled /", url: w.URL(0, "/p/0"), status: 404},
		{name: "past the last page", url: w.URL(0, "/p/25"), status: 404},
		{name: "leading zero", url: w.URL(0, "/p/03"), status: 404},
		{name: "trailing slash", url: w.URL(0, "/p/3/"), status: 404},
		{name: "unknown path", url: w.URL(0, "/nope"), status: 404},
		{name: "query", url: w.URL(0, "/p/3?a=b"), status: 404},
		{name: "empty query is no query", url: w.URL(0, "/p/"+p0+"?"), status: 200},
		{name: "gone", url: w.URL(0, "/gone/12"), status: 404},
		{name: "unknown host", url: "http://h4.sim.test/", status: 404},
		{name: "port in Host ignored", url: w.URL(1, "/p/"+p1), host: "H1.sim.test:8080", status: 200},
		{name: "percent-encoded digits", url: w.URL(1, "/p/%3"+strings.Join(strings.Split(p1, ""), "%3")), status: 200, contains: []string{"<title>Page " + p1 + " - h1.sim.test</title>"}},
		{name: "post", url: w.URL(0, "/"), method: http.MethodPost, status: 405},
		{name: "redirect", url: redirect, status: 301},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d", method, tt.url, resp.StatusCode, tt.status)
			}
			if tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tt.ctype)
			}
			for _, s := range tt.contains {
				if !strings.Contains(body.String(), s) {
					t.Errorf("body lacks %q", s)
				}
			}
			for _, s := range tt.notContains {
				if strings.Contains(body.String(), s) {
					t.Errorf("body has %q", s)
				}
			}
			if tt.status == 301 {
				loc, err := resp.Location()
				if err != nil {
					t.Fatal(err)
				}
				got, _ := CanonicalURL(loc.String())
				if got != next {
					t.Errorf("redirect %s -> %s, want %s", tt.url, got, next)
				}
			}
		})
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestTransientErrors: an error page fails ErrorAttempts times, then serves.
func TestTransientErrors(t *testing.T) {
	cfg := smallConfig()
	w := startWeb(t, cfg)
	c := w.Client()
	var failing []string
	for _, u := range w.Truth(TruthOptions{}).Pages {
		p, _ := w.pageOf(u)
		if w.g.failures(p) > 0 {
			failing = append(failing, u)
		}
	}
	if len(failing) == 0 {
		t.Fatal("no error page in the config")
	}
	u := failing[0]
	var got []int
	for range cfg.ErrorAttempts + 2 {
		got = append(got, get(t, c, u).status)
	}
	for i, s := range got {
		fails := i < cfg.ErrorAttempts
		if fails != (s == 500 || s == 503) || (!fails && s != 200) {
			t.Fatalf("statuses of %s = %v, want %d of 500/503 then 200", u, got, cfg.ErrorAttempts)
		}
	}
	// A fresh web fails the same way: same statuses, same order.
	w2 := startWeb(t, cfg)
	var again []int
	for range cfg.ErrorAttempts + 2 {
		again = append(again, get(t, w2.Client(), u).status)
	}
	if !slicesEqual(got, again) {
		t.Errorf("second web answered %v, first %v", again, got)
	}
	// ResetRequests makes the page fail again.
	w.ResetRequests()
	if s := get(t, c, u).status; s != got[0] {
		t.Errorf("after ResetRequests: %d, want %d", s, got[0])
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLatency checks that a response is not sent before the latency has
// passed (a lower bound, so it cannot flake on a slow machine).
func TestLatency(t *testing.T) {
	cfg := smallConfig()
	cfg.Latency = 40 * time.Millisecond
	cfg.LatencyJitter = 20 * time.Millisecond
	w := startWeb(t, cfg)
	c := w.Client()
	for _, path := range []string{"/", "/robots.txt", "/nope"} {
		start := time.Now()
		get(t, c, w.URL(0, path))
		if d := time.Since(start); d < cfg.Latency {
			t.Errorf("GET %s took %v, want at least %v", path, d, cfg.Latency)
		}
	}
}

// TestCloseAbortsSlowRequests: Close returns although a handler is asleep
// for an hour, and the web refuses connections afterwards.
func TestCloseAbortsSlowRequests(t *testing.T) {
	cfg := smallConfig()
	cfg.Latency = time.Hour
	w, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := w.Client()
	done := make(chan error, 1)
	go func() {
		resp, err := c.Get(w.URL(0, "/"))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for len(w.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-done; err == nil {
		t.Error("the slow request succeeded, want an error")
	}
	if _, err := c.Get(w.URL(0, "/")); err == nil {
		t.Error("GET after Close succeeded")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestContextStopsWeb(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := Start(ctx, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	w.Close()
	if _, err := w.Client().Get(w.URL(0, "/")); err == nil {
		t.Error("GET after the context ended succeeded")
	}
}

func TestResolveSeedsURL(t *testing.T) {
	cfg := smallConfig()
	w := startWeb(t, cfg)
	res := w.Resolve()
	if len(res) != cfg.Hosts {
		t.Fatalf("Resolve has %d entries, want %d", len(res), cfg.Hosts)
	}
	if got := res["h3.sim.test:80"]; got != w.Addr() || !strings.HasPrefix(got, "127.0.0.1:") {
		t.Errorf(`Resolve()["h3.sim.test:80"] = %q, want %q on loopback`, got, w.Addr())
	}
	seeds := w.Seeds()
	if len(seeds) != cfg.Hosts || seeds[2] != "http://h2.sim.test/" {
		t.Errorf("Seeds() = %v", seeds)
	}
	if got := w.URL(3, "/p/17"); got != "http://h3.sim.test/p/17" {
		t.Errorf("URL(3, /p/17) = %q", got)
	}
	if _, err := w.DialContext(t.Context(), "tcp", "example.com:80"); err == nil {
		t.Error("DialContext dialed example.com")
	}
	if _, err := w.Client().Get("http://x1.elsewhere.test/"); err == nil {
		t.Error("the client reached an external host")
	}
}

func TestRequestLog(t *testing.T) {
	cfg := smallConfig()
	cfg.ErrorRate = 0
	w := startWeb(t, cfg)
	c := w.Client()
	n := itoa(plainPage(t, w, 1, 3))
	enc := "/p/%3" + strings.Join(strings.Split(n, ""), "%3")
	get(t, c, w.URL(1, "/robots.txt"))
	get(t, c, w.URL(1, enc))
	get(t, c, w.URL(1, "/p/"+n))
	get(t, c, "http://h1.sim.test:80/nope")
	got := w.Requests()
	want := []Request{
		{Host: "h1.sim.test", Target: "/robots.txt", URL: "http://h1.sim.test/robots.txt", Status: 200, Attempt: 1},
		{Host: "h1.sim.test", Target: enc, URL: "http://h1.sim.test/p/" + n, Status: 200, Attempt: 1},
		{Host: "h1.sim.test", Target: "/p/" + n, URL: "http://h1.sim.test/p/" + n, Status: 200, Attempt: 2},
		{Host: "h1.sim.test", Target: "/nope", URL: "http://h1.sim.test/nope", Status: 404, Attempt: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Requests() has %d records, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		if g.Start.IsZero() || (i > 0 && g.Start.Before(got[i-1].Start)) {
			t.Errorf("record %d: start %v out of order", i, g.Start)
		}
		g.Start = time.Time{}
		if g != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, g, want[i])
		}
	}
}

func TestRequestLogCap(t *testing.T) {
	cfg := smallConfig()
	cfg.MaxRecorded = 3
	w := startWeb(t, cfg)
	c := w.Client()
	for i := range 5 {
		get(t, c, w.URL(0, "/p/"+itoa(i+1)))
	}
	if n := len(w.Requests()); n != 3 {
		t.Errorf("Requests() kept %d, want 3", n)
	}
	r := w.Report(ReportOptions{})
	if !r.Truncated || r.Requests != 5 {
		t.Errorf("Report: Truncated %v, Requests %d; want true, 5", r.Truncated, r.Requests)
	}
}
