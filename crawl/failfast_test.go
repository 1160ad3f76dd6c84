package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/config"
)

// TestRunRefusesBadSeedsBeforeStarting: seeds that could never be fetched
// are all refused, each with its reason, before the data dir, NATS or the
// state file exist (before: a loopback seed without the flag ran 41 s and
// exited 0 with "0 pages fetched, 4 errors"; port 99999 and a 100 KB seed
// ran and did nothing).
func TestRunRefusesBadSeedsBeforeStarting(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Frontier.MetricsAddr = ""
	cfg.Crawl.Seeds = []string{
		"http://127.0.0.1:8080/",
		"http://%31%32%37.0.0.1/",
		"http://10.0.0.7/",
		"http://localhost:8080/",
		"http://127.0.0.1:99999/",
		"http://127.0.0.1:0/",
		"ftp://files.example/",
		"http://example.com/" + strings.Repeat("a", 100<<10),
	}
	_, err := Run(context.Background(), Options{Config: cfg})
	if !errors.Is(err, ErrSeeds) {
		t.Fatalf("Run: %v, want ErrSeeds", err)
	}
	for _, want := range []string{
		`"http://127.0.0.1:8080/": 127.0.0.1 is a loopback address; pass --allow-private-networks`,
		`"http://%31%32%37.0.0.1/": 127.0.0.1 is a loopback address`,
		`"http://10.0.0.7/": 10.0.0.7 is a private address`,
		`localhost resolves to`,
		`port is outside the range`,
		`"http://127.0.0.1:0/": port 0 cannot be connected to`,
		`not an http(s) url`,
		`a seed of 102419 bytes is longer than scope.max_url_length (2048)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(cfg.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data dir exists after a refusal (stat: %v)", err)
	}
	cfg.Crawler.AllowPrivateNetworks = true
	if err := CheckSeeds(context.Background(), cfg.Crawl.Seeds, cfg); err == nil || strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "port") {
		t.Errorf("with --allow-private-networks: %v; want only the port, scheme and length refusals", err)
	}
}

// TestRunFailsWhenNothingWasFetched: every seed on a loopback port nobody
// listens on: the crawl ends with ErrNothingFetched, not success.
func TestRunFailsWhenNothingWasFetched(t *testing.T) {
	var seeds []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, fmt.Sprintf("http://%s/", ln.Addr()))
		ln.Close() // nobody listens there now: connection refused
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Frontier.MetricsAddr = ""
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Politeness.MinDelay = 0
	cfg.Politeness.DelayFactor = 0
	cfg.Politeness.MaxRetries = 0
	cfg.Robots.Obey = false
	cfg.Crawl.Seeds = seeds
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := Run(ctx, Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}})
	if !errors.Is(err, ErrNothingFetched) {
		t.Fatalf("Run: %v (summary %+v), want ErrNothingFetched", err, sum)
	}
	if sum.StopReason != StopDone || sum.Errors == 0 || sum.Errors != sum.Fetched {
		t.Errorf("summary: stop %q, fetched %d, errors %d", sum.StopReason, sum.Fetched, sum.Errors)
	}
}

// TestRunWaitsForTheServiceOnEveryPath: a Run that fails after it started
// the frontier service (here the worker cannot be built: 0 workers) stops
// and waits for the service before it closes the state file (before: the
// service's Run was cancelled but not waited for, so State.Close ran under
// a live service and its goroutine outlived Run).
func TestRunWaitsForTheServiceOnEveryPath(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Frontier.MetricsAddr = ""
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawler.Workers = 0
	cfg.Crawl.Seeds = []string{"http://127.0.0.1:1/"}
	_, err := Run(context.Background(), Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}})
	if err == nil {
		t.Fatal("Run with 0 workers succeeded")
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "frontier/service.(*Server).Run") {
		t.Fatalf("the frontier service is still running after Run returned %v:\n%s", err, stacks)
	}
}
