package service

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// freeAddr returns a loopback address nothing listens on (just closed).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	deadline := time.Now().Add(svcWait)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
			}
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunServesMetrics is not parallel: the port freeAddr found is free
// only until something else binds one, as parallel tests do; the serial
// tests run before the parallel ones start.
func TestRunServesMetrics(t *testing.T) {
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	cfg.Frontier.MetricsAddr = freeAddr(t)
	nc := bustest.Connect(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, nc, nil) }()

	h := publisher(t, cfg, nc)
	h.links("", 0, "http://a.test/", "http://a.test/b")
	// Polled until every figure shows: the admitted URLs are in Status as
	// soon as Apply commits, the message counter and the stream backlog
	// only after the acks.
	wants := []string{
		`trawl_frontier_urls_admitted_total{shard="0"} 2`,
		`trawl_frontier_messages_total{shard="0",type="links"} 1`,
		`trawl_frontier_commit_duration_seconds_count{shard="0"}`,
		`trawl_frontier_stream_pending{shard="0"} 0`,
		"go_goroutines",
	}
	missing := func(metrics string) []string {
		var out []string
		for _, want := range wants {
			if !strings.Contains(metrics, want) {
				out = append(out, want)
			}
		}
		return out
	}
	deadline := time.Now().Add(svcWait)
	for {
		metrics := httpGet(t, "http://"+cfg.Frontier.MetricsAddr+"/metrics")
		m := missing(metrics)
		if len(m) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %q:\n%s", m, metrics)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if page := httpGet(t, "http://"+cfg.Frontier.MetricsAddr+"/"); !strings.Contains(page, "<html") {
		t.Errorf("status page is not HTML:\n%.300s", page)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

func TestRunMetricsAddressTaken(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg.Frontier.MetricsAddr = ln.Addr().String()
	if err := Run(context.Background(), cfg, bustest.Connect(t, e), nil); err == nil || !strings.Contains(err.Error(), "metrics_addr") {
		t.Fatalf("Run with a taken metrics port: %v", err)
	}
}
