package synthweb

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// startWeb starts cfg and closes it when the test ends.
func startWeb(t testing.TB, cfg Config) *Web {
	t.Helper()
	w, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

// response is what a GET returned.
type response struct {
	status   int
	location string
	ctype    string
	body     string
}

func get(t testing.TB, c *http.Client, url string) response {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", url, err)
	}
	return response{status: resp.StatusCode, location: resp.Header.Get("Location"),
		ctype: resp.Header.Get("Content-Type"), body: string(b)}
}

// smallConfig is a hand-checkable site with every feature on.
func smallConfig() Config {
	c := DefaultConfig()
	c.Hosts = 4
	c.PagesPerHost = 25
	c.PrivatePages = 3
	c.OutDegree = 6
	c.RobotsFraction = 0.5
	c.RedirectFraction = 0.15
	c.ErrorRate = 0.1
	c.ErrorAttempts = 2
	c.BrokenLinkFraction = 0.1
	c.DuplicateLinkFraction = 0.3
	c.Trap = true
	c.Seed = 42
	return c
}

// plainPage returns the number of a page of host h that answers 200 at
// once (no redirect, no transient error), at least from.
func plainPage(t testing.TB, w *Web, h, from int) int {
	t.Helper()
	for n := from; n < w.cfg.PagesPerHost; n++ {
		p := page{host: int32(h), kind: kindPage, n: int64(n)}
		if !w.g.isRedirect(p) && w.g.failures(p) == 0 {
			return n
		}
	}
	t.Fatalf("host %d has no plain page from %d", h, from)
	return 0
}
