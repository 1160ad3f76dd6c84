package crawl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/frontierclient"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// testConfig is a one-command crawl of web with a small filter and fast
// timers, as `crawler demo` configures it.
func testConfig(t *testing.T, web *synthweb.Web, dir string) config.Config {
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.MetricsAddr = ""
	cfg.Frontier.CheckpointInterval = time.Second
	cfg.Politeness.MinDelay = 0
	cfg.Politeness.DelayFactor = 0
	cfg.Politeness.BackoffBase = 10 * time.Millisecond
	cfg.Crawler.Workers = 16
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawler.Resolve = web.Resolve()
	cfg.Crawl.Seeds = web.Seeds()
	cfg.Crawl.SummaryJSON = filepath.Join(dir, "summary.json")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestRunCrawlsEverythingOnceAndResumes(t *testing.T) {
	web := startWeb(t, 5, 40, 0)
	dir := t.TempDir()
	cfg := testConfig(t, web, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var out bytes.Buffer
	sum, err := Run(ctx, Options{Config: cfg, Progress: &out, LogEvery: time.Millisecond, Frontier: service.Options{AckWait: 5 * time.Second}})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if sum.StopReason != StopDone {
		t.Fatalf("stop reason %q, want %q", sum.StopReason, StopDone)
	}
	rep := web.Report(synthweb.ReportOptions{})
	if p := rep.Problems(); len(p) > 0 {
		t.Fatalf("crawl checked against the synthetic web's truth:\n%s", strings.Join(p, "\n"))
	}
	if rep.Fetched != rep.Want || rep.Want == 0 {
		t.Fatalf("fetched %d of %d reachable pages", rep.Fetched, rep.Want)
	}
	if sum.Frontier.Queued != 0 || sum.Frontier.Leased != 0 || sum.Frontier.Done == 0 {
		t.Errorf("final frontier status %+v", sum.Frontier)
	}
	if !strings.Contains(out.String(), "fetched") {
		t.Errorf("no progress line written: %q", out.String())
	}
	var js Summary
	b, err := os.ReadFile(cfg.Crawl.SummaryJSON)
	if err != nil || json.Unmarshal(b, &js) != nil || js.StopReason != StopDone || js.Fetched != sum.Fetched || js.Version != SummaryVersion {
		t.Errorf("summary JSON %s: %v", b, err)
	}

	// The same command again: nothing left, nothing fetched twice.
	requests := len(web.Requests())
	sum2, err := Run(ctx, Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if sum2.StopReason != StopDone || sum2.Fetched != 0 || len(web.Requests()) != requests {
		t.Errorf("resume of a finished crawl fetched %d pages (%d requests), reason %q", sum2.Fetched, len(web.Requests())-requests, sum2.StopReason)
	}
}

func TestRunStopsAtMaxPagesAndResumes(t *testing.T) {
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost = 3, 60
	wc.ErrorRate, wc.RedirectFraction = 0, 0
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	cfg := testConfig(t, web, t.TempDir())
	cfg.Crawl.MaxPages = 20
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := Run(ctx, Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.StopReason != StopMaxPages || sum.Fetched != 20 { // the worker asks for no more leases than max_pages leaves
		t.Fatalf("max-pages stop: reason %q, fetched %d", sum.StopReason, sum.Fetched)
	}
	cfg.Crawl.MaxPages = 0
	if _, err := Run(ctx, Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	rep := web.Report(synthweb.ReportOptions{})
	if len(rep.Missed) > 0 || len(rep.Repeated) > 0 {
		t.Fatalf("after resume: %d missed, %d fetched twice: %v %v", len(rep.Missed), len(rep.Repeated), rep.Missed, rep.Repeated)
	}
}

// A site that cannot be reached ends the crawl: robots.txt stays
// unavailable through its retries and the host's URLs are given up
// (RFC 9309: complete disallow), instead of waiting forever.
func TestRunEndsWhenTheSiteIsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	// The metrics port is taken: a one-command crawl carries on without it.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Frontier.Filter.Capacity = 1000
	cfg.Frontier.MetricsAddr = taken.Addr().String()
	cfg.Politeness.MinDelay = 0
	cfg.Politeness.BackoffBase = 10 * time.Millisecond
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawler.ConnectTimeout = time.Second
	cfg.Crawl.Seeds = []string{"http://" + addr + "/"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := Run(ctx, Options{Config: cfg})
	if !errors.Is(err, ErrNothingFetched) { // it ends, and says it fetched nothing
		t.Fatalf("Run: %v, want ErrNothingFetched", err)
	}
	if sum.StopReason != StopDone || sum.Frontier.Rejected["robots_unavailable"] != 1 || sum.Frontier.Queued != 0 {
		t.Fatalf("unreachable site: stop %q, frontier %+v", sum.StopReason, sum.Frontier)
	}
}

// --expose-nats: a crawler process elsewhere joins a one-command crawl with
// nothing but the NATS URL, takes a share of the work, and the crawl still
// fetches every page exactly once.
func TestRunExposedNATSLetsAnotherCrawlerJoin(t *testing.T) {
	web := startWeb(t, 8, 60, 5*time.Millisecond)
	addr := freeLoopbackAddr(t)
	cfg := testConfig(t, web, t.TempDir())
	cfg.NATS.Expose = addr
	cfg.Crawler.Workers = 2
	cfg.Politeness.MinDelay = 5 * time.Millisecond

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := runAsync(ctx, cfg)

	// The joining crawler: only the URL with the crawler's user from the
	// users file (it learns the shard count).
	var nc *nats.Conn
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		var users bus.Users
		if users, err = bus.ReadUsers(UsersFile(cfg.DataDir)); err == nil {
			join := config.NATS{URL: "nats://crawler:" + users[bus.RoleCrawler] + "@" + addr}
			cctx, ccancel := context.WithTimeout(ctx, time.Second)
			nc, err = bus.ConnectAs(cctx, join, bus.RoleCrawler, "joiner", nil)
			ccancel()
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("joining the exposed NATS at %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer nc.Close()
	fc, err := frontierclient.New(nc, msg.NewSubjects(""))
	if err != nil {
		t.Fatal(err)
	}
	shards, err := fc.Shards(ctx)
	if err != nil || shards != 1 {
		t.Fatalf("shard count from the standalone frontier: %d, %v", shards, err)
	}
	w, err := fetcher.NewWorker(nc, fetcher.WorkerOptions{Config: cfg.Crawler, Subjects: msg.NewSubjects(""), Shards: shards, ID: "joiner"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopW := context.WithCancel(ctx)
	werr := make(chan error, 1)
	go func() { werr <- w.Run(wctx) }()

	r := <-done
	stopW()
	if err := <-werr; err != nil {
		t.Errorf("joining worker: %v", err)
	}
	if r.err != nil || r.sum.StopReason != StopDone || r.sum.NATS == "" {
		t.Fatalf("crawl: %v, %+v", r.err, r.sum)
	}
	joined := w.Stats().Fetched
	if joined == 0 || r.sum.Fetched == 0 {
		t.Errorf("the work was not shared: standalone fetched %d, joining crawler %d", r.sum.Fetched, joined)
	}
	rep := web.Report(synthweb.ReportOptions{})
	if len(rep.Missed) > 0 || len(rep.Repeated) > 0 || rep.Fetched != rep.Want {
		t.Errorf("two crawlers: fetched %d of %d, %d missed, %d twice", rep.Fetched, rep.Want, len(rep.Missed), len(rep.Repeated))
	}
	t.Logf("standalone fetched %d, joining crawler %d", r.sum.Fetched, joined)
}

// TestRunRefusesAMissingStateFile: a resume whose frontier state file was
// deleted or emptied while the data dir's NATS store holds the crawl is
// refused, leaving the data dir as it was; --fresh (Options.Fresh)
// starts over deliberately. It used to crawl everything again.
func TestRunRefusesAMissingStateFile(t *testing.T) {
	web := startWeb(t, 2, 10, 0)
	dir := t.TempDir()
	cfg := testConfig(t, web, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first, err := Run(ctx, Options{Config: cfg})
	if err != nil || first.StopReason != StopDone || first.Fetched == 0 {
		t.Fatalf("first crawl: %+v, %v", first, err)
	}
	state := filepath.Join(dir, "frontier-0-of-1.db")
	for _, lose := range []struct {
		name string
		do   func() error
	}{
		{"deleted", func() error { return os.Remove(state) }},
		{"emptied", func() error { return os.WriteFile(state, nil, 0o600) }},
	} {
		if err := lose.do(); err != nil {
			t.Fatal(err)
		}
		before, statErr := os.Stat(state)
		sum, err := Run(ctx, Options{Config: cfg})
		if !errors.Is(err, service.ErrStateMissing) || !strings.Contains(err.Error(), "--fresh") {
			t.Fatalf("%s state file: Run: %v (fetched %d), want ErrStateMissing naming --fresh", lose.name, err, sum.Fetched)
		}
		if sum.Fetched != 0 {
			t.Errorf("%s state file: fetched %d pages before refusing", lose.name, sum.Fetched)
		}
		after, afterErr := os.Stat(state)
		if (statErr == nil) != (afterErr == nil) || (statErr == nil && after.Size() != before.Size()) {
			t.Errorf("%s state file: the refusal changed it (%v, %v)", lose.name, after, afterErr)
		}
	}
	t.Logf("refusal: %v", func() error { _, err := Run(ctx, Options{Config: cfg}); return err }())

	again, err := Run(ctx, Options{Config: cfg, Fresh: true})
	if err != nil || again.StopReason != StopDone || again.Fetched == 0 || again.Frontier.Done != first.Frontier.Done {
		t.Fatalf("--fresh crawl: fetched %d, %d done (first crawl %d done), stop %q, %v", again.Fetched, again.Frontier.Done, first.Frontier.Done, again.StopReason, err)
	}
}
