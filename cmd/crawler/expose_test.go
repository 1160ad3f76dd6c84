package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/crawl"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// exposedCrawl starts a one-command crawl of a small synthetic web with
// nats.expose on a free loopback port, and returns that address, the
// config and the crawl's result channel once the port accepts connections.
func exposedCrawl(t *testing.T, ctx context.Context) (string, config.Config, <-chan error) {
	t.Helper()
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost, wc.Latency = 2, 30, 20*time.Millisecond
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = web.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.MetricsAddr = ""
	cfg.Politeness.MinDelay = 20 * time.Millisecond
	cfg.Politeness.DelayFactor = 0
	cfg.Crawler.Workers = 4
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawler.Resolve = web.Resolve()
	cfg.Crawl.Seeds = web.Seeds()
	cfg.Crawl.SummaryJSON = filepath.Join(cfg.DataDir, "summary.json")
	cfg.NATS.Expose = addr
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		sum, err := crawl.Run(ctx, crawl.Options{Config: cfg})
		if err == nil && sum.StopReason != crawl.StopDone {
			err = fmt.Errorf("crawl stopped: %s", sum.StopReason)
		}
		done <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exposed NATS at %s never listened: %v", addr, err)
		}
	}
	return addr, cfg, done
}

// otherHost is a site outside the crawl's seeds that counts its requests.
// hits counts the requests for /, admitted those for /admitted.
func otherHost(t *testing.T) (srv *httptest.Server, hits, admitted *atomic.Int64) {
	hits, admitted = new(atomic.Int64), new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			hits.Add(1)
		case "/admitted":
			admitted.Add(1)
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>not part of this crawl</body></html>")
	}))
	t.Cleanup(srv.Close)
	return srv, hits, admitted
}

// TestExposedCrawlRefusesStrangers is the attack on nats.expose: a client
// without credentials adds a seed on another host (`crawler seed --nats
// nats://127.0.0.1:PORT http://other-host/`) and listens on trawl.>
// while the crawl runs. Neither may work: the seed is refused and never
// fetched, and the listener reads nothing.
func TestExposedCrawlRefusesStrangers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other, hits, admitted := otherHost(t)
	addr, cfg, done := exposedCrawl(t, ctx)

	var out, errb bytes.Buffer
	code := seedCmd([]string{"--nats", "nats://" + addr, "--allow-private-networks", other.URL + "/"}, nil, &out, &errb)
	// The listener subscribes after the seed command asked the frontiers
	// for the shard count: a subscriber on trawl.> would be a responder
	// to that request that never answers.
	var spied atomic.Int64
	spy, spyErr := nats.Connect("nats://"+addr, nats.Timeout(2*time.Second), nats.MaxReconnects(0))
	if spyErr == nil {
		defer spy.Close()
		if _, err := spy.Subscribe("trawl.>", func(*nats.Msg) { spied.Add(1) }); err != nil {
			t.Fatal(err)
		}
		_ = spy.Flush()
	}

	// The same command with the seeder's credentials (from the users
	// file) is accepted: the refusal above is the missing credentials.
	users, err := bus.ReadUsers(crawl.UsersFile(cfg.DataDir))
	if err != nil {
		t.Fatal(err)
	}
	var sout, serr bytes.Buffer
	seederURL := "nats://" + string(bus.RoleSeeder) + ":" + users[bus.RoleSeeder] + "@" + addr
	if c := seedCmd([]string{"--nats", seederURL, "--allow-private-networks", other.URL + "/admitted"}, nil, &sout, &serr); c != 0 {
		t.Errorf("the seeder's credentials: exit %d, %s", c, serr.String())
	}

	if err := <-done; err != nil {
		t.Fatalf("crawl: %v", err)
	}
	if got := admitted.Load(); got != 1 {
		t.Errorf("the seeder's seed was fetched %d times, want 1", got)
	}
	t.Logf("stranger: seed exit %d (%s), other host requests %d, messages read on trawl.> %d, listener connect error %v",
		code, bytes.TrimSpace(errb.Bytes()), hits.Load(), spied.Load(), spyErr)
	if code == 0 {
		t.Errorf("a seed without credentials was accepted: %s", out.String())
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("a stranger's seed was fetched: %d requests to %s", n, other.URL)
	}
	if spyErr == nil {
		t.Errorf("a client without credentials connected to the exposed NATS")
	}
	if n := spied.Load(); n != 0 {
		t.Errorf("a client without credentials read %d messages on trawl.>", n)
	}
}
