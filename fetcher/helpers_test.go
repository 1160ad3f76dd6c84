package fetcher

import (
	"context"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher/httpclient"
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

// newTestClient is the worker's client for testConfig, changed by mutate
// and then by opts.
func newTestClient(t testing.TB, mutate func(*config.Crawler), opts ...func(*httpclient.Options)) *httpclient.Client {
	t.Helper()
	cfg := testConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	o := clientOptions(cfg)
	for _, f := range opts {
		f(&o)
	}
	c, err := httpclient.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// runWorker starts w.Run. cancel ends it; wait returns Run's error once
// it has returned.
func runWorker(w *Worker) (cancel context.CancelFunc, wait func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	return cancel, func() error { return <-runErr }
}
