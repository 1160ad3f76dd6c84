// Package e2e holds trawl's end-to-end tests: the distributed topology of
// scripts/cluster-local.sh (a 3-node NATS JetStream cluster built from the
// nats-server module, 2 frontier shards, 3 crawler processes) crawling the
// synthetic web on loopback, checked against its ground truth.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/synthweb"
	"github.com/trawlhq/trawl/internal/testkit/clustertest"
)

// binDir holds the binaries built once for every test of the package.
var binDir string

func TestMain(m *testing.M) {
	code := func() int {
		flag.Parse()
		if testing.Short() {
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "trawl-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := clustertest.Build(root(), dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		binDir = dir
		return m.Run()
	}()
	os.Exit(code)
}

func root() string {
	r, _ := filepath.Abs("..")
	return r
}

// startCluster runs the topology of the issue: 3 NATS nodes, 2 frontier
// shards, 3 crawlers.
func startCluster(t *testing.T, cfg map[string]any) *clustertest.Cluster {
	return clustertest.Start(t, clustertest.Topology{Root: root(), Bin: binDir, Nodes: 3, Shards: 2, Crawlers: 3, Config: cfg})
}

// e2eWeb is the synthetic web of the end-to-end tests: 100 hosts x 200
// pages, every feature on (robots rules, redirects, transient errors,
// duplicate and cross-host links), no trap.
func e2eWeb(t *testing.T) *synthweb.Web { return e2eWebSeed(t, 0) }

// e2eWebSeed is e2eWeb's web with its seed moved by delta: another site
// of the same shape, whose URLs (and so the audit's sample of them) are
// drawn afresh.
func e2eWebSeed(t *testing.T, delta int64) *synthweb.Web {
	t.Helper()
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost = 100, 200
	wc.Seed += delta
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	return web
}

const e2eDelay = 20 * time.Millisecond

// e2eConfig is the configuration every process of a run gets.
// leaseTimeout is short only where a crawler is killed (its leases must come
// back quickly); elsewhere the default (2 min) keeps a slow, loaded machine
// from expiring a lease whose fetch is still on its way, which would fetch
// a page twice.
// capacity 0 keeps the default scalable filter; otherwise the filter is
// fixed at capacity (the audit test overfills one on purpose).
func e2eConfig(web *synthweb.Web, capacity uint64, fraction float64, leaseTimeout time.Duration) map[string]any {
	filter := map[string]any{"mode": "scalable", "fp": 0.01}
	if capacity > 0 {
		filter = map[string]any{"mode": "fixed", "capacity": capacity, "fp": 0.01}
	}
	return map[string]any{
		"frontier": map[string]any{
			"filter":              filter,
			"lease_timeout":       leaseTimeout.String(),
			"checkpoint_interval": "2s",
		},
		"politeness": map[string]any{"min_delay": e2eDelay.String(), "delay_factor": 0, "backoff_base": "50ms"},
		"audit":      map[string]any{"fraction": fraction},
		"crawler": map[string]any{
			"workers": 24, "resolve": web.Resolve(), "allow_private_networks": true,
		},
		"log": map[string]any{"level": "info"},
	}
}

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds binaries and runs a multi-process cluster")
	}
}

// Every reachable page exactly once; robots.txt obeyed and fetched once per
// host across all crawlers; no host fetched faster than its delay.
func TestClusterCrawlsEveryPageOncePolitely(t *testing.T) {
	skipShort(t)
	web := e2eWeb(t)
	c := startCluster(t, e2eConfig(web, 0, 1.0/64, 2*time.Minute))
	c.Seed(web.Seeds())
	start := time.Now()
	st := c.WaitIdle(6*time.Minute, nil)
	t.Logf("crawl finished in %v: %d done, %d admitted, %d duplicates", time.Since(start).Round(time.Second), st.Done, st.Admitted, st.Duplicates)
	rep := web.Report(synthweb.ReportOptions{Delay: e2eDelay, Tolerance: 2 * time.Millisecond, MaxInFlight: 1})
	if rep.Want < 20_000 {
		t.Fatalf("the synthetic web has only %d reachable pages; the test needs 20,000", rep.Want)
	}
	for _, p := range rep.Problems() {
		t.Error(p)
	}
	if rep.Fetched != rep.Want || len(rep.Repeated) != 0 || len(rep.RobotsFetches) != 100 {
		t.Errorf("fetched %d of %d, %d twice, robots.txt fetched on %d hosts", rep.Fetched, rep.Want, len(rep.Repeated), len(rep.RobotsFetches))
	}
	if st.Audit.FPSkips != 0 {
		t.Errorf("a filter 500x too large reported %d false-positive skips", st.Audit.FPSkips)
	}
}

// A crawler killed with SIGKILL mid-crawl loses nothing: its leases expire
// and other crawlers fetch them; the crawl completes.
func TestClusterSurvivesCrawlerKill(t *testing.T) {
	skipShort(t)
	web := e2eWeb(t)
	c := startCluster(t, e2eConfig(web, 0, 1.0/64, 5*time.Second))
	c.Seed(web.Seeds())
	killed := false
	c.WaitIdle(6*time.Minute, func(s msg.Status) {
		if !killed && s.Done > 6000 {
			killed = true
			pid := c.PID("crawler-1")
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			t.Logf("SIGKILLed crawler-1 (pid %d) with %d URLs done, %d leased", pid, s.Done, s.Leased)
		}
	})
	if !killed {
		t.Fatal("the crawl ended before a crawler could be killed")
	}
	rep := web.Report(synthweb.ReportOptions{})
	if len(rep.Missed) > 0 {
		t.Errorf("%d reachable pages never fetched after the kill, e.g. %v", len(rep.Missed), rep.Missed[:min(5, len(rep.Missed))])
	}
	// A page the killed crawler fetched but could not report is fetched
	// again (at-least-once): at most one per fetch it had in flight (24)
	// plus one per page waiting for its publish acks (24 more).
	if len(rep.Repeated) > 48 {
		t.Errorf("%d pages fetched twice; the killed crawler had at most 48 unreported", len(rep.Repeated))
	}
	if len(rep.DisallowedFetches) > 0 || rep.PolitenessViolations > 0 {
		t.Errorf("after the kill: %d robots violations, %d politeness violations", len(rep.DisallowedFetches), rep.PolitenessViolations)
	}
}

// With a deliberately undersized filter the audit's 95% interval covers the
// true false-positive skip rate, measured against the synthetic web's ground
// truth. A 95% interval misses one web's crawl in twenty by design, so a
// miss is given one independent second crawl, of another web (another
// seed); both missing (0.25%) fails. The second crawl cannot be of the
// same web: the audit samples keys by a fixed hash of their URLs, so it
// would sample the same URLs again, and which of them the filter skips
// varies only with the order they arrive in. (The default web's sample is
// an unlucky one: its first crawl sampled 0-8 skips in fourteen runs
// where its truth predicted about 8, and missed in about 4 of them.)
func TestClusterAuditCoversTrueSkipRate(t *testing.T) {
	skipShort(t)
	for attempt := 1; attempt <= 2; attempt++ {
		web := e2eWebSeed(t, int64(attempt-1))
		c := startCluster(t, e2eConfig(web, 8000, 1.0/16, 2*time.Minute))
		c.Seed(web.Seeds())
		st := c.WaitIdle(6*time.Minute, nil)
		c.Stop()
		rep := web.Report(synthweb.ReportOptions{})
		trueRate := float64(len(rep.WronglySkipped)) / float64(rep.Offered)
		a := st.Audit
		t.Logf("attempt %d: true skip rate %.4f (%d of %d offered); audit %.4f [%.4f, %.4f] from %d sampled; implied by fill %.4f",
			attempt, trueRate, len(rep.WronglySkipped), rep.Offered, a.Rate, a.Low, a.High, a.SampledNew+a.FPSkips, st.Filter.ImpliedFP)
		// The filter must have skipped something for the test to test. An
		// audit that sampled no skip while the crawl had some is a miss
		// like any other (its interval starts at 0), given the second crawl.
		if len(rep.WronglySkipped) == 0 {
			t.Fatalf("an 8,000-URL filter over %d URLs skipped nothing: the test is not testing", rep.Offered)
		}
		if len(rep.Repeated) > 0 || len(rep.DisallowedFetches) > 0 {
			t.Fatalf("%d pages fetched twice, %d robots violations", len(rep.Repeated), len(rep.DisallowedFetches))
		}
		if trueRate >= a.Low && trueRate <= a.High {
			return
		}
		t.Logf("attempt %d: the 95%% interval missed the true rate", attempt)
	}
	t.Fatal("the audit's 95% interval missed the true skip rate in two independent crawls")
}
