package httpclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

func brotlied(p []byte) []byte {
	var b bytes.Buffer
	bw := brotli.NewWriter(&b)
	bw.Write(p)
	bw.Close()
	return b.Bytes()
}

func TestFetchBasics(t *testing.T) {
	page := []byte(`<html><head><title>t</title></head><body><a href="/b">b</a></body></html>`)
	var gotUA, gotAE atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		gotUA.Store(r.UserAgent())
		gotAE.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		w.Write(page)
	})
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(testsite.Gzip(t, page))
	})
	mux.HandleFunc("/br", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "br")
		w.Write(brotlied(page))
	})
	mux.HandleFunc("/sniffed", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no header: sniff
		w.Write(page)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(page)
	})
	mux.HandleFunc("/pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write([]byte("%PDF-1.4\n"))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "../there?x=1#f")
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(bytes.Repeat([]byte("a"), 3000))
	})
	s, hits := testsite.Start(t, mux)
	c := newTestClient(t, func(cfg *Options) { cfg.UserAgent = "testbot/1.0 (+http://x.test/)"; cfg.MaxBody = 2048 })

	tests := []struct {
		path       string
		status     int
		ctype      string
		parserType string
		html       bool
		body       []byte
		redirect   string
		retryAfter time.Duration
		truncated  bool
	}{
		{"/plain", 200, "text/html; charset=iso-8859-1", "text/html; charset=iso-8859-1", true, page, "", 0, false},
		{"/gzip", 200, "text/html", "text/html", true, page, "", 0, false},
		{"/br", 200, "text/html", "text/html", true, page, "", 0, false},
		{"/sniffed", 200, "text/html; charset=utf-8", "text/html", true, page, "", 0, false},
		{"/text", 200, "text/plain", "text/plain", false, page, "", 0, false},
		{"/pdf", 200, "application/pdf", "application/pdf", false, []byte("%PDF-1.4\n"), "", 0, false},
		{"/moved", 302, "", "", false, []byte{}, s.URL + "/there?x=1#f", 0, false},
		{"/busy", 429, "text/plain; charset=utf-8", "", false, nil, "", 120 * time.Second, false},
		{"/down", 503, "text/plain; charset=utf-8", "", false, nil, "", time.Hour, false},
		{"/big", 200, "text/html", "text/html", true, bytes.Repeat([]byte("a"), 2048), "", 0, true},
	}
	for _, tt := range tests {
		r := c.Fetch(context.Background(), s.URL+tt.path)
		if r.Err != nil {
			t.Errorf("%s: %v", tt.path, r.Err)
			continue
		}
		if r.Status != tt.status || r.HTML != tt.html || r.Redirect != tt.redirect || r.Truncated != tt.truncated {
			t.Errorf("%s: status %d html %v redirect %q truncated %v, want %d %v %q %v",
				tt.path, r.Status, r.HTML, r.Redirect, r.Truncated, tt.status, tt.html, tt.redirect, tt.truncated)
		}
		if tt.ctype != "" && r.ContentType != tt.ctype {
			t.Errorf("%s: content type %q, want %q", tt.path, r.ContentType, tt.ctype)
		}
		if tt.parserType != "" && r.ParserType != tt.parserType {
			t.Errorf("%s: parser type %q, want %q", tt.path, r.ParserType, tt.parserType)
		}
		if tt.body != nil && !bytes.Equal(r.Body, tt.body) {
			t.Errorf("%s: body %q, want %q", tt.path, r.Body, tt.body)
		}
		if d := r.RetryAfter - tt.retryAfter; d < -2*time.Second || d > 2*time.Second {
			t.Errorf("%s: retry after %v, want %v", tt.path, r.RetryAfter, tt.retryAfter)
		}
		if r.Timings.Total <= 0 || r.Timings.FirstByte <= 0 {
			t.Errorf("%s: timings not measured: %+v", tt.path, r.Timings)
		}
	}
	if got := gotUA.Load(); got != "testbot/1.0 (+http://x.test/)" {
		t.Errorf("User-Agent sent = %v", got)
	}
	if got := gotAE.Load(); got != "gzip, br" {
		t.Errorf("Accept-Encoding sent = %v", got)
	}
	if n := hits.Hits(); n != int64(len(tests)) {
		t.Errorf("server saw %d requests for %d fetches: a redirect was followed", n, len(tests))
	}
}

func TestFetchRobots(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/r1", http.StatusMovedPermanently)
	})
	for i := 1; i <= 3; i++ {
		next := fmt.Sprintf("/r%d", i+1)
		mux.HandleFunc(fmt.Sprintf("/r%d", i), func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, next, http.StatusFound)
		})
	}
	mux.HandleFunc("/r4", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("User-agent: *\nDisallow: /x\n")) })
	mux.HandleFunc("/huge/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("# comment line\n"), 100_000))
	})
	mux.HandleFunc("/gone/robots.txt", http.NotFound)
	s, _ := testsite.Start(t, mux)
	c := newTestClient(t, nil)

	// 4 redirects (robots.txt -> r1 -> r2 -> r3 -> r4): within the limit.
	r := c.FetchRobots(context.Background(), s.URL+"/robots.txt")
	if r.Err != nil || r.Status != 200 || string(r.Body) != "User-agent: *\nDisallow: /x\n" || r.FinalURL != s.URL+"/r4" {
		t.Errorf("4 redirects: status %d err %v final %q body %q", r.Status, r.Err, r.FinalURL, r.Body)
	}
	// h0 -> h1 -> ... -> h7: the sixth redirect is not followed.
	mux2 := http.NewServeMux()
	for i := 0; i <= 6; i++ {
		next := fmt.Sprintf("/h%d", i+1)
		mux2.HandleFunc(fmt.Sprintf("/h%d", i), func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, next, http.StatusFound) })
	}
	s2, hits2 := testsite.Start(t, mux2)
	r = c.FetchRobots(context.Background(), s2.URL+"/h0")
	if !errors.Is(r.Err, ErrTooManyRedirects) || r.Status != 302 {
		t.Errorf("6 redirects: status %d err %v, want 302 and ErrTooManyRedirects", r.Status, r.Err)
	}
	if n := hits2.Hits(); n != 1+MaxRobotsRedirects {
		t.Errorf("6 redirects: %d requests, want %d", n, 1+MaxRobotsRedirects)
	}
	r = c.FetchRobots(context.Background(), s.URL+"/huge/robots.txt")
	if r.Err != nil || !r.Truncated || len(r.Body) != MaxRobotsBody {
		t.Errorf("huge robots.txt: err %v truncated %v len %d, want %d", r.Err, r.Truncated, len(r.Body), MaxRobotsBody)
	}
	r = c.FetchRobots(context.Background(), s.URL+"/gone/robots.txt")
	if r.Err != nil || r.Status != 404 {
		t.Errorf("404 robots.txt: status %d err %v", r.Status, r.Err)
	}
	// Unreachable: a port nothing listens on.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	r = c.FetchRobots(context.Background(), "http://"+dead+"/robots.txt")
	if r.Err == nil || r.Status != 0 {
		t.Errorf("unreachable robots.txt: status %d err %v, want 0 and an error", r.Status, r.Err)
	}
}

func TestFetchHTTP2(t *testing.T) {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<p>%s</p>", r.Proto)
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	c := newTestClient(t, nil, func(o *Options) {
		o.TLSConfig = &tls.Config{RootCAs: s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	})
	r := c.Fetch(context.Background(), s.URL+"/")
	if r.Err != nil || r.Proto != "HTTP/2.0" || string(r.Body) != "<p>HTTP/2.0</p>" {
		t.Fatalf("proto %q body %q err %v, want HTTP/2.0", r.Proto, r.Body, r.Err)
	}
	if r.Timings.TLS <= 0 {
		t.Errorf("TLS handshake time not measured: %+v", r.Timings)
	}
}

func TestResolveOverride(t *testing.T) {
	var host atomic.Value
	s, _ := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { host.Store(r.Host) }))
	c := newTestClient(t, func(cfg *Options) {
		cfg.Resolve = map[string]string{"Staging.Example.COM:80": addrOf(t, s).String()}
	})
	r := c.Fetch(context.Background(), "http://staging.example.com/")
	if r.Err != nil || r.Status != 200 || host.Load() != "staging.example.com" {
		t.Fatalf("status %d err %v host %v", r.Status, r.Err, host.Load())
	}
}

func TestDNSCache(t *testing.T) {
	var lookups atomic.Int64
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		lookups.Add(1)
		if host == "nx.test" {
			return nil, errors.New("no such host")
		}
		return []netip.Addr{netip.MustParseAddr("192.0.2.7")}, nil
	}
	now := time.Unix(1000, 0)
	r, err := newDNSCache(lookup, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.now = func() time.Time { return now }
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		got, err := r.resolve(ctx, "a.test:443")
		if err != nil || len(got) != 1 || got[0].String() != "192.0.2.7:443" {
			t.Fatalf("resolve = %v, %v", got, err)
		}
	}
	if n := lookups.Load(); n != 1 {
		t.Errorf("3 resolves within the TTL made %d lookups, want 1", n)
	}
	now = now.Add(2 * time.Minute)
	r.resolve(ctx, "a.test:443")
	if n := lookups.Load(); n != 2 {
		t.Errorf("after the TTL: %d lookups, want 2", n)
	}
	for i := 0; i < 2; i++ {
		if _, err := r.resolve(ctx, "nx.test:80"); !errors.Is(err, ErrResolve) {
			t.Errorf("nx.test: err = %v, want ErrResolve", err)
		}
	}
	if n := lookups.Load(); n != 3 {
		t.Errorf("a failed lookup is not cached: %d lookups, want 3", n)
	}
	if _, err := newDNSCache(lookup, 0, map[string]string{"a.test:80": "not-an-ip:80"}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad override: err = %v, want ErrConfig", err)
	}
}

// TestHostile serves hostile servers' misbehaviours (endless or slow
// headers, gzip bombs, binary bodies, ...). Each must end with a
// clear outcome within the fetch timeout and bounded memory; the same
// client then fetches a good page.
func TestHostile(t *testing.T) {
	// 64 MiB of spaces as 64 concatenated gzip members of 1 MiB (~64 KiB).
	bomb := bytes.Repeat(testsite.Gzip(t, bytes.Repeat([]byte(" "), 1<<20)), 64)
	binary := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 600)...)
	mux := http.NewServeMux()
	mux.HandleFunc("/endless-headers", testsite.Hijack(func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 200 OK\r\n"))
		line := []byte("X-Padding: " + strings.Repeat("a", 1000) + "\r\n")
		for {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	}))
	mux.HandleFunc("/slow-headers", testsite.Hijack(func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 200 OK\r\n"))
		for i := 0; i < 100; i++ {
			if _, err := c.Write([]byte("X-A: b\r\n")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}))
	mux.HandleFunc("/endless-body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		chunk := bytes.Repeat([]byte("<p>endless</p>"), 1000)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for i := 0; i < 1000; i++ {
			if _, err := w.Write([]byte("<p>drip</p>")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	})
	mux.HandleFunc("/gzip-bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	})
	mux.HandleFunc("/corrupt-gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write([]byte("this is not gzip at all"))
	})
	mux.HandleFunc("/binary-as-html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(binary)
	})
	mux.HandleFunc("/invalid-utf8", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<a href=\"/\xff\xfe\">\xc3\x28</a>"))
	})
	mux.HandleFunc("/reset", testsite.Hijack(func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n<a href=/x>x</a>"))
		c.(*net.TCPConn).SetLinger(0) // close sends RST
	}))
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<p>fine</p>")) })
	s, _ := testsite.Start(t, mux)
	const maxBody = 1 << 20
	c := newTestClient(t, func(cfg *Options) {
		cfg.MaxBody = maxBody
		cfg.HeaderTimeout = 500 * time.Millisecond
		cfg.FetchTimeout = 1500 * time.Millisecond
	})

	tests := []struct {
		path      string
		status    int
		errLike   string // substring of the error; "" means no error
		errIs     error
		truncated bool
		html      bool
		bodyLen   int // -1: do not check
	}{
		{"/endless-headers", 0, "headers exceeded", nil, false, false, 0},
		{"/slow-headers", 0, "timeout awaiting response headers", nil, false, false, 0},
		{"/endless-body", 200, "", nil, true, true, maxBody},
		{"/slow-body", 200, "timed out", nil, false, true, -1},
		{"/gzip-bomb", 200, "", nil, true, true, maxBody},
		{"/corrupt-gzip", 200, "gzip", ErrEncoding, false, false, 0},
		{"/binary-as-html", 200, "", nil, false, false, len(binary)},
		{"/invalid-utf8", 200, "", nil, false, true, -1},
		{"/reset", 200, "reading body", nil, false, true, len("<a href=/x>x</a>")},
	}
	for _, tt := range tests {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		r := c.Fetch(context.Background(), s.URL+tt.path)
		runtime.ReadMemStats(&after)
		t.Logf("%s: %v in %v", tt.path, r.Err, time.Since(start))
		if r.Status != tt.status || r.Truncated != tt.truncated || r.HTML != tt.html {
			t.Errorf("%s: status %d truncated %v html %v, want %d %v %v", tt.path, r.Status, r.Truncated, r.HTML, tt.status, tt.truncated, tt.html)
		}
		switch {
		case tt.errLike == "" && r.Err != nil:
			t.Errorf("%s: unexpected error %v", tt.path, r.Err)
		case tt.errLike != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tt.errLike)):
			t.Errorf("%s: error %v, want one mentioning %q", tt.path, r.Err, tt.errLike)
		case tt.errIs != nil && !errors.Is(r.Err, tt.errIs):
			t.Errorf("%s: error %v, want %v", tt.path, r.Err, tt.errIs)
		}
		if tt.bodyLen >= 0 && len(r.Body) != tt.bodyLen {
			t.Errorf("%s: body of %d bytes, want %d", tt.path, len(r.Body), tt.bodyLen)
		}
		// Bounded memory: a fetch allocates a small multiple of the cap,
		// whatever the server sends (64 MiB for the bomb, unbounded for
		// the endless ones).
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16*maxBody {
			t.Errorf("%s: allocated %d MiB for a %d MiB cap", tt.path, alloc>>20, maxBody>>20)
		}
		if ok := c.Fetch(context.Background(), s.URL+"/ok"); ok.Err != nil || string(ok.Body) != "<p>fine</p>" {
			t.Errorf("after %s the next fetch fails: %v", tt.path, ok.Err)
		}
	}
}
