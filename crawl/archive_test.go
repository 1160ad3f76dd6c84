//go:build linux

package crawl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/fetcher/warc"
	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// mountTmpfs mounts a tmpfs of size at dir (created), unmounted when the
// test ends; it skips the test when mounting is not permitted.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("a full disk is simulated with a small tmpfs, and mounting one is not permitted here (%v): run as root, or in a container with CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// warcResponses reads every file of dir (failing the test on any read
// error or left-over .open file) and returns the target URIs of its
// response records, with how many each has.
func warcResponses(t *testing.T, dir string) map[string]int {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	got := map[string]int{}
	for _, name := range names {
		if strings.HasSuffix(name, ".warc.gz"+warc.IndexSuffix) {
			continue // the file's CDXJ index
		}
		if !strings.HasSuffix(name, ".warc.gz") {
			t.Errorf("%s: not a finished .warc.gz", filepath.Base(name))
			continue
		}
		recs, err := warc.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Type == warc.TypeResponse {
				got[r.Get("WARC-Target-URI")]++
			}
		}
	}
	return got
}

// fetchLogURLs returns the URLs of the fetch log's lines; every line
// must be whole JSON.
func fetchLogURLs(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e fetcher.LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("fetch log line %q: %v", sc.Text(), err)
		}
		got[e.URL]++
	}
	return got
}

// TestRunStopsWhenTheArchiveIsFull: the WARC
// directory is a tmpfs too small for the crawl. The crawl stops with an
// error naming the archive (not "done, 0 errors"); after the tmpfs is
// grown, the same command resumes and completes the archive: every page
// the frontier counts as done has a response record and a fetch-log line.
func TestRunStopsWhenTheArchiveIsFull(t *testing.T) {
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost = 3, 60
	wc.ErrorRate, wc.RedirectFraction = 0, 0
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	dir := t.TempDir()
	cfg := testConfig(t, web, dir)
	cfg.Crawler.WARCDir = filepath.Join(dir, "warc")
	cfg.Crawler.FetchLog = filepath.Join(dir, "fetch.jsonl")
	mountTmpfs(t, cfg.Crawler.WARCDir, "48k")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sum, err := Run(ctx, Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}})
	if err == nil || !errors.Is(err, fetcher.ErrArchive) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("crawl into a full WARC directory: reason %q, err %v; want an archive error", sum.StopReason, err)
	}
	t.Logf("first run: %v", err)
	if err := syscall.Mount("tmpfs", cfg.Crawler.WARCDir, "tmpfs", syscall.MS_REMOUNT, "size=64m"); err != nil {
		t.Fatal(err)
	}
	cfg.Crawler.ArchiveSync = config.ArchiveSyncAlways // the resume fsyncs every page
	sum, err = Run(ctx, Options{Config: cfg, Frontier: service.Options{AckWait: 5 * time.Second}})
	if err != nil || sum.StopReason != StopDone {
		t.Fatalf("resume after space was freed: reason %q, err %v", sum.StopReason, err)
	}
	checkArchiveComplete(t, web, cfg)
}

// checkArchiveComplete: every page the crawl reached, and the frontier
// records as done, has a response record and a fetch-log line.
func checkArchiveComplete(t *testing.T, web *synthweb.Web, cfg config.Config) {
	t.Helper()
	rep := web.Report(synthweb.ReportOptions{})
	if rep.Fetched != rep.Want || rep.Want == 0 {
		t.Fatalf("fetched %d of %d reachable pages", rep.Fetched, rep.Want)
	}
	responses := warcResponses(t, cfg.Crawler.WARCDir)
	logged := fetchLogURLs(t, cfg.Crawler.FetchLog)
	done := doneURLs(t, cfg, web)
	var missingW, missingL []string
	for _, u := range done {
		if responses[u] == 0 {
			missingW = append(missingW, u)
		}
		if logged[u] == 0 {
			missingL = append(missingL, u)
		}
	}
	if len(done) < rep.Want || len(missingW) > 0 || len(missingL) > 0 {
		t.Fatalf("%d pages done (want %d); missing from the WARC: %d %v; from the fetch log: %d %v",
			len(done), rep.Want, len(missingW), head(missingW), len(missingL), head(missingL))
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// doneURLs opens the crawl's frontier state and returns the URLs the web
// was asked for (robots.txt aside) that it records as done.
func doneURLs(t *testing.T, cfg config.Config, web *synthweb.Web) []string {
	t.Helper()
	cfg.Frontier.Shard, cfg.Frontier.Shards = 0, 1
	st, err := frontier.Open(frontier.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seen := map[string]bool{}
	var done []string
	for _, r := range web.Requests() {
		if seen[r.URL] || strings.HasSuffix(r.URL, "/robots.txt") {
			continue
		}
		seen[r.URL] = true
		e, err := st.Explain(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		if e.State == "done" {
			done = append(done, r.URL)
		}
	}
	return done
}

// The SIGKILL test's child: a one-command crawl configured by killEnv.
const killEnv = "TRAWL_CRAWL_KILL_CHILD"

type killChildConfig struct {
	DataDir, FetchLog, WARCDir string
	Seeds                      []string
	Resolve                    map[string]string
}

// TestKillChild is the child process of TestKilledCrawlLogsEveryDonePage;
// it does nothing unless killEnv is set.
func TestKillChild(t *testing.T) {
	v := os.Getenv(killEnv)
	if v == "" {
		t.Skip("the child process of TestKilledCrawlLogsEveryDonePage")
	}
	var kc killChildConfig
	if err := json.Unmarshal([]byte(v), &kc); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = kc.DataDir
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.MetricsAddr = ""
	cfg.Politeness.MinDelay, cfg.Politeness.DelayFactor = 0, 0
	cfg.Crawler.Workers = 16
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Crawler.Resolve = kc.Resolve
	cfg.Crawler.FetchLog, cfg.Crawler.WARCDir = kc.FetchLog, kc.WARCDir
	cfg.Crawl.Seeds = kc.Seeds
	// The killed child's leases and unacknowledged messages come back
	// after these, not after minutes.
	cfg.Frontier.LeaseTimeout = 2 * time.Second
	if _, err := Run(context.Background(), Options{Config: cfg, Frontier: service.Options{AckWait: time.Second}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Hour) // the parent kills this process before
}

// TestKilledCrawlLogsEveryDonePage: a one-command
// crawl in a child process is SIGKILLed mid-crawl, several times, each
// time resumed. Every page its frontier records as done is in the fetch
// log (and in the WARC), and every log line is whole.
func TestKilledCrawlLogsEveryDonePage(t *testing.T) {
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost = 4, 150
	wc.ErrorRate, wc.RedirectFraction = 0, 0
	wc.Latency = 2 * time.Millisecond
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	dir := t.TempDir()
	kc := killChildConfig{DataDir: dir, FetchLog: filepath.Join(dir, "fetch.jsonl"), WARCDir: filepath.Join(dir, "warc"),
		Seeds: web.Seeds(), Resolve: web.Resolve()}
	env, _ := json.Marshal(kc)
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Crawler.FetchLog, cfg.Crawler.WARCDir = kc.FetchLog, kc.WARCDir
	for round := range 3 {
		at := len(web.Requests()) + 150
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), killEnv+"="+string(env))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for len(web.Requests()) < at && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if len(web.Requests()) < at {
			t.Fatalf("round %d: the child crawled %d pages in a minute:\n%s", round, len(web.Requests()), out.String())
		}
		done := doneURLs(t, cfg, web)
		logged := fetchLogURLs(t, kc.FetchLog)
		var missing []string
		for _, u := range done {
			if logged[u] == 0 {
				missing = append(missing, u)
			}
		}
		if len(missing) > 0 {
			t.Fatalf("after kill %d: %d of %d pages the frontier records as done are not in the fetch log (%d lines), e.g. %v",
				round+1, len(missing), len(done), len(logged), head(missing))
		}
		t.Logf("kill %d: %d pages done, all %d in the fetch log", round+1, len(done), len(done))
	}
}
