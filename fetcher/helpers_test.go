package fetcher

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// testConfig is the default crawler configuration with the guard off
// (tests serve from loopback) and short timeouts.
func testConfig() config.Crawler {
	c := config.Default().Crawler
	c.AllowPrivateNetworks = true
	c.FetchTimeout = 5 * time.Second
	c.HeaderTimeout = 2 * time.Second
	c.ConnectTimeout = 2 * time.Second
	c.TLSTimeout = 2 * time.Second
	return c
}

func newTestClient(t testing.TB, mutate func(*config.Crawler), opts ...func(*Options)) *Client {
	t.Helper()
	o := Options{Config: testConfig()}
	if mutate != nil {
		mutate(&o.Config)
	}
	for _, f := range opts {
		f(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// counted wraps h and counts the requests it serves.
type counted struct {
	h http.Handler
	n atomic.Int64
}

func (c *counted) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.n.Add(1); c.h.ServeHTTP(w, r) }

func newServer(t testing.TB, h http.Handler) (*httptest.Server, *counted) {
	t.Helper()
	c := &counted{h: h}
	s := httptest.NewServer(c)
	t.Cleanup(s.Close)
	return s, c
}

// hijack serves raw bytes on the connection: fn writes whatever it likes.
func hijack(fn func(c net.Conn)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fn(conn)
	}
}

func addrOf(t testing.TB, s *httptest.Server) netip.AddrPort {
	t.Helper()
	return netip.MustParseAddrPort(s.Listener.Addr().String())
}

// runWorker starts w.Run. cancel ends it; wait returns Run's error once
// it has returned.
func runWorker(w *Worker) (cancel context.CancelFunc, wait func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	return cancel, func() error { return <-runErr }
}
