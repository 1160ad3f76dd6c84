package synthweb

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func FuzzCanonicalURL(f *testing.F) {
	for _, s := range []string{
		"http://h3.sim.test/p/12", "HTTP://H3.SIM.TEST:80/p/./12?#frag", "http://h1.sim.test/p/%31%32",
		"http://h1.sim.test/a/../../b/./c/..", "http://[::1]:8080/x?y", "http://h1.sim.test", "mailto:x@y", "",
		"http://h1.sim.test/%zz", "http://h1.sim.test/a%2Fb?q=%41#f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := CanonicalURL(raw)
		if err != nil {
			return
		}
		if !strings.HasPrefix(c, "http://") {
			t.Fatalf("CanonicalURL(%q) = %q, not http", raw, c)
		}
		c2, err := CanonicalURL(c)
		if err != nil || c2 != c {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", raw, c, c2, err)
		}
	})
}

// FuzzServeHTTP feeds arbitrary hosts and targets to the handler: it must
// answer one of its statuses and never panic.
func FuzzServeHTTP(f *testing.F) {
	cfg := smallConfig()
	w, err := Start(f.Context(), cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { w.Close() })
	for _, s := range [][2]string{
		{"h1.sim.test", "/p/3"}, {"H1.SIM.TEST:99", "/cal/2027/1"}, {"h0.sim.test", "/private/0"},
		{"h2.sim.test", "/cal/999999999/12"}, {"h3.sim.test", "/static/app.js"}, {"x", "/../.."},
		{"h1.sim.test", "/p/99999999999999999999"}, {"h01.sim.test", "/"}, {"", ""}, {"h1.sim.test", "/gone/5?x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, host, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			u = &url.URL{Path: target}
		}
		req := (&http.Request{Method: http.MethodGet, Host: host, URL: u, Header: http.Header{}}).WithContext(t.Context())
		rec := httptest.NewRecorder()
		w.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 301, 404, 500, 503:
		default:
			t.Fatalf("host %q target %q: status %d", host, target, rec.Code)
		}
		w.ResetRequests() // keep the log small
	})
}
