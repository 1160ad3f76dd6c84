//go:build linux

package crawl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// fullDiskWeb is a site big enough to fill the small tmpfs of the
// full-disk tests: 3,200 pages, no errors or redirects, so that every
// reachable page is fetched once in a complete crawl.
func fullDiskWeb(t *testing.T) *synthweb.Web {
	t.Helper()
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost = 8, 400
	wc.ErrorRate, wc.RedirectFraction = 0, 0
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = web.Close() })
	return web
}

// fillThenResume runs the crawl of cfg with mnt, a tmpfs the caller
// mounted, and fills mnt to the last byte (a filler file) once the
// crawl is under way: Run must fail within seconds, with an error that
// names full and says it is full. Then the filler is removed, mnt grows
// to 256 MiB, and the same command runs again: it ends by itself, every reachable page is
// done, and no page is fetched twice in the resumed run nor fetched
// again once recorded done.
func fillThenResume(t *testing.T, web *synthweb.Web, cfg config.Config, mnt, full string) {
	t.Helper()
	opts := Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := runOptsAsync(ctx, opts)
	filler := filepath.Join(mnt, "filler")
	var r runResult
	select {
	case r = <-res:
		t.Fatalf("the crawl ended before the disk was filled: reason %q, err %v", r.sum.StopReason, r.err)
	case <-waitRequests(web, 200):
	}
	fill(t, filler)
	start := time.Now()
	r = <-res
	sum, err, took := r.sum, r.err, time.Since(start)
	t.Logf("first run: %v %v after the disk filled, %d pages fetched, reason %q", err, took.Round(time.Millisecond), sum.Fetched, sum.StopReason)
	if err == nil || !strings.Contains(err.Error(), full) || !strings.Contains(err.Error(), "is full") {
		t.Fatalf("crawl into a full disk: reason %q, err %v; want an error naming %s and saying it is full", sum.StopReason, err, full)
	}
	// Generous: the failure is detected in about a second and the
	// shutdown is bounded by shutdown_grace; a hang lasts until ctx ends.
	if took > 40*time.Second {
		t.Fatalf("the crawl took %v to stop on a full disk", took)
	}
	logged := fetchLogURLs(t, cfg.Crawler.FetchLog)
	doneBefore := map[string]bool{}
	for _, u := range doneURLs(t, cfg, web) {
		doneBefore[u] = true
	}
	requestsBefore := len(web.Requests())

	// Run again without room: refused as fast, as clearly.
	start = time.Now()
	sum, err = Run(ctx, opts)
	t.Logf("run again on the full disk: %v after %v", err, time.Since(start).Round(time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "is full") || time.Since(start) > 40*time.Second {
		t.Fatalf("run again on the full disk: reason %q, err %v after %v; want an error saying it is full", sum.StopReason, err, time.Since(start))
	}

	// Make room: the filler goes, and the file system grows (the state
	// file is sparse: bbolt sized it at 16 MiB, and the resume writes
	// into it).
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, "size=256m"); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel2()
	sum, err = Run(ctx2, opts)
	if err != nil || sum.StopReason != StopDone {
		t.Fatalf("resume after space was freed: reason %q, err %v", sum.StopReason, err)
	}
	rep := web.Report(synthweb.ReportOptions{})
	if rep.Fetched != rep.Want || rep.Want == 0 {
		t.Fatalf("fetched %d of %d reachable pages", rep.Fetched, rep.Want)
	}
	again := map[string]int{}
	for _, r := range web.Requests()[requestsBefore:] {
		if strings.HasSuffix(r.URL, "/robots.txt") {
			continue
		}
		again[r.URL]++
	}
	var twice, refetched []string
	for u, n := range again {
		if n > 1 {
			twice = append(twice, u)
		}
		if doneBefore[u] {
			refetched = append(refetched, u)
		}
	}
	done := doneURLs(t, cfg, web)
	t.Logf("first run: %d pages done, %d fetch-log lines; resume: %d fetched; %d done in all", len(doneBefore), len(logged), len(again), len(done))
	if len(twice) > 0 || len(refetched) > 0 || len(done) < rep.Want {
		t.Fatalf("resume: %d pages fetched twice %v, %d done pages fetched again %v, %d of %d done",
			len(twice), head(twice), len(refetched), head(refetched), len(done), rep.Want)
	}
}

// waitRequests returns a channel closed once web has had n requests.
func waitRequests(web *synthweb.Web, n int) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		defer close(c)
		for len(web.Requests()) < n {
			time.Sleep(time.Millisecond)
		}
	}()
	return c
}

// fill writes the file path until its file system has no space left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// fullDiskConfig is testConfig with a fetch log, on a small file system.
func fullDiskConfig(t *testing.T, web *synthweb.Web, dir string) config.Config {
	cfg := testConfig(t, web, dir)
	cfg.Crawler.FetchLog = filepath.Join(t.TempDir(), "fetch.jsonl")
	cfg.Crawler.ShutdownGrace = time.Second
	// The leases the stopped crawl held come back after this in the
	// resumed one (loopback fetches take milliseconds).
	cfg.Frontier.LeaseTimeout = 5 * time.Second
	return cfg
}

// TestRunStopsWhenTheNATSStoreIsFull: the embedded server's store
// (data_dir/nats) alone is on a tmpfs, filled mid-crawl. Before (on
// 767acc7): the crawl hung at 0 pages/s until the test's 60 s deadline,
// returned 120 s after the disk filled, and its error said nothing of a
// full disk. Now: about 4 s, naming the store.
func TestRunStopsWhenTheNATSStoreIsFull(t *testing.T) {
	web := fullDiskWeb(t)
	dir := t.TempDir()
	nats := filepath.Join(dir, "nats")
	mountTmpfs(t, nats, "16m")
	fillThenResume(t, web, fullDiskConfig(t, web, dir), nats, nats)
}

// TestRunStopsWhenTheDataDirIsFull: the whole data dir (state file and
// NATS store) is on a tmpfs, filled mid-crawl; whichever write fails
// first stops it. Before (on 767acc7): an error 60 s after the disk
// filled when bbolt's commit failed first (naming neither the directory
// nor a full disk), a hang when JetStream's did. Now: about 4 s.
func TestRunStopsWhenTheDataDirIsFull(t *testing.T) {
	web := fullDiskWeb(t)
	dir := filepath.Join(t.TempDir(), "data")
	mountTmpfs(t, dir, "16m")
	fillThenResume(t, web, fullDiskConfig(t, web, dir), dir, dir)
}

// TestInterruptWithAStalledBusKeepsTheGrace: JetStream stops answering
// (the embedded server's JetStream shut down, as it does when its store
// fails) while fetches are in flight, and the crawl is interrupted at
// that moment. Run returns within shutdown_grace and a few seconds, and
// the summary says how many lease results were left unreported. Before
// (on 767acc7): 66-70 s (publishes retried for fetch_timeout + 30 s), the
// summary silent. Now: about 6 s with grace 1 s.
func TestInterruptWithAStalledBusKeepsTheGrace(t *testing.T) {
	web := startWeb(t, 4, 200, 300*time.Millisecond)
	dir := t.TempDir()
	cfg := testConfig(t, web, dir)
	cfg.Crawler.ShutdownGrace = time.Second
	var emb *bus.Embedded
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := runOptsAsync(ctx, Options{Config: cfg, onBus: func(e *bus.Embedded) { emb = e }, Frontier: service.Options{AckWait: 5 * time.Second}})
	select {
	case <-waitRequests(web, 40):
	case <-time.After(time.Minute):
		t.Fatalf("the crawl made %d requests in a minute", len(web.Requests()))
	}
	if err := emb.StallJetStream(); err != nil {
		t.Fatal(err)
	}
	cancel()
	start := time.Now()
	var r runResult
	select {
	case r = <-res:
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not return within 2 minutes of the interrupt")
	}
	took := time.Since(start)
	t.Logf("returned %v after the interrupt: err %v, reason %q, unreported %d", took.Round(time.Millisecond), r.err, r.sum.StopReason, r.sum.Unreported)
	// 6 s here in nearly every run; 66-70 s before. Once, under the whole
	// suite at -race on 2 cores, 16.0 s: 10 s more, the length of the
	// request and publish-ack timeouts (frontier/service, fetcher), so
	// one of them most likely ran out on the stalled bus; not found yet.
	// The bound leaves room for one such wait.
	if took > cfg.Crawler.ShutdownGrace+20*time.Second {
		t.Errorf("Run returned %v after the interrupt; want within shutdown_grace (%v) and a few seconds", took, cfg.Crawler.ShutdownGrace)
	}
	if r.sum.Unreported == 0 {
		t.Errorf("summary: 0 lease results unreported, want the fetches in flight when JetStream stalled")
	}
	var text strings.Builder
	_ = r.sum.WriteText(&text)
	if !strings.Contains(text.String(), "not reported") {
		t.Errorf("summary text does not say what was left unreported:\n%s", text.String())
	}
}
