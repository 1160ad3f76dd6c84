package fetcher

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
	"github.com/trawlhq/trawl/parser"
)

// TestRouteAgreesWithFrontier crawls nothing: it routes links the way a
// worker does and hands each batch to the frontier shard it was routed to,
// with two shards and each aggressive canonical rule. Every link must be
// accepted by that shard's Prepare (never wrong_shard), and `frontier
// explain` must ask that same shard, which must say it owns the URL.
func TestRouteAgreesWithFrontier(t *testing.T) {
	var links []msg.Link
	for i := range 16 {
		for _, u := range []string{
			"http://www.h%d.test/p", // www
			"https://h%d.test:80/x", // scheme: https on :80 keys as http://h.test/
			"HTTPS://www.www.h%d.test/docs/index.html?utm_source=n&b=2&a=1&sid=9", // all of them
			"http://h%d.test/cart;jsessionid=0AF3?item=7&PHPSESSID=9f",            // session
		} {
			links = append(links, msg.Link{URL: fmt.Sprintf(u, i), Kind: uint8(parser.KindNavigation)})
		}
	}
	rules := []string{"", "session", "tracking", "sort", "www", "scheme", "index", "all"}
	for _, rule := range rules {
		t.Run("rules="+rule, func(t *testing.T) {
			e := bustest.Start(t)
			cfg := config.Default()
			cfg.DataDir = t.TempDir()
			cfg.NATS.URL = e.ClientURL()
			cfg.Frontier.Filter.Capacity = 10_000
			cfg.Frontier.MetricsAddr = ""
			cfg.Frontier.Shards = 2
			cfg.Scope.Canonical = rule
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			states := make([]*frontier.State, 2)
			for shard := range states {
				c := cfg
				c.Frontier.Shard = shard
				states[shard] = startShard(t, e, c)
			}

			// The worker as cmd/crawler configures it.
			rules, err := parser.ParseRules(cfg.Scope.Canonical)
			if err != nil {
				t.Fatal(err)
			}
			nc := bustest.Connect(t, e)
			w, err := NewWorker(nc, WorkerOptions{Config: cfg.Crawler, Shards: cfg.Frontier.Shards, Canonical: rules})
			if err != nil {
				t.Fatal(err)
			}
			r := route("http://src.test/", 0, links, w.router(), nil)
			if r.links != len(links) || r.dropped != 0 {
				t.Fatalf("routed %d links, dropped %d; want %d, 0", r.links, r.dropped, len(links))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, shard := range r.shards {
				for _, b := range r.batches[shard] {
					cb := service.CoreLinkBatch(b)
					p := states[shard].Prepare(&cb)
					if n := p.Rejected[frontier.ReasonWrongShard]; n != 0 || len(p.Links) != len(b.Links) {
						t.Errorf("shard %d took %d of %d links routed to it, %d as wrong_shard", shard, len(p.Links), len(b.Links), n)
					}
					for _, l := range b.Links {
						rep, err := service.RequestExplain(ctx, nc, cfg, l.URL)
						if err != nil {
							t.Fatalf("explain %s: %v", l.URL, err)
						}
						var ex frontier.Explanation
						if err := json.Unmarshal(rep.Explain, &ex); err != nil {
							t.Fatal(err)
						}
						if rep.Shard != shard || !ex.Owned {
							t.Errorf("%s: fetcher routes to shard %d, explain asked shard %d (owned %v)", l.URL, shard, rep.Shard, ex.Owned)
						}
					}
				}
			}
		})
	}
}

// startShard runs a frontier service for cfg's shard until the test ends
// and returns its State.
func startShard(t *testing.T, e *bus.Embedded, cfg config.Config) *frontier.State {
	t.Helper()
	st, err := frontier.Open(frontier.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	nc := bustest.Connect(t, e)
	svc, err := service.New(nc, st, service.Options{Config: cfg})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shard %d: %v", cfg.Frontier.Shard, err)
		}
		st.Close()
	})
	subj := msg.NewSubjects(cfg.NATS.Prefix).Control(cfg.Frontier.Shard)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := nc.Request(subj, []byte("{}"), time.Second); err == nil {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("shard %d does not answer on %s", cfg.Frontier.Shard, subj)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
