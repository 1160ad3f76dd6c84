package e2e

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/synthweb"
	"github.com/trawlhq/trawl/internal/testkit/clustertest"
)

// The chaos test: the distributed topology crawls the synthetic web while a
// seeded schedule SIGKILLs a crawler, a NATS node and a frontier in turn,
// restarting each on its own data; then the frontiers' state, the
// crawlers' fetch logs and WARC files are checked against the web's ground
// truth (see checkChaos).
//
//	go test ./e2e -run Chaos -chaos=short   # 15,642 pages, 3 kills
//	go test ./e2e -run Chaos -chaos=full    # 51,852 pages, 12 kills
//	go test ./e2e -run Chaos -chaos=full -chaos.seed=N   # replay a printed schedule
//
// Without -chaos the test is skipped: it adds a minute of kills to a CI
// run that must not depend on a seeded schedule on a loaded machine.
var (
	chaosMode = flag.String("chaos", "", `run the chaos test: "short" or "full"`)
	chaosSeed = flag.Uint64("chaos.seed", 0, "seed of the chaos schedule (0: drawn from the clock and printed)")
)

// chaosRun is the size of one chaos run.
type chaosRun struct {
	hosts, pages int // the synthetic web
	events       int // kills (rotating crawler, NATS node, frontier)
	timeout      time.Duration
}

var chaosRuns = map[string]chaosRun{
	"short": {hosts: 100, pages: 150, events: 3, timeout: 8 * time.Minute},
	"full":  {hosts: 250, pages: 200, events: 12, timeout: 30 * time.Minute},
}

// chaosMaxRepeated is the share of pages the fetch logs may show fetched
// twice: a crawler killed after writing a page's line but before JetStream
// acknowledged its outcome fetches it again (at-least-once).
const chaosMaxRepeated = 0.001

// chaosWorkers is each crawler's concurrent fetches in the chaos test.
const chaosWorkers = 4

func TestClusterChaos(t *testing.T) {
	skipShort(t)
	run, ok := chaosRuns[*chaosMode]
	if !ok {
		t.Skip(`chaos test: run with -chaos=short or -chaos=full (see chaos_test.go)`)
	}
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost = run.hosts, run.pages
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	want := web.Reachable(synthweb.TruthOptions{})

	out := t.TempDir()
	// A killed crawler's leases come back after 10 s; a restarted frontier
	// is back well within it.
	cfg := e2eConfig(web, 0, 1.0/64, 10*time.Second)
	// A crawler killed after archiving a page but before JetStream acked
	// its outcome fetches it again (at-least-once). It holds at most
	// workers fetch slots and as many publish slots: with 4 workers a kill
	// repeats at most 8 pages however loaded the machine, which keeps the
	// crawler kills of a run within chaosMaxRepeated by construction.
	cfg["crawler"].(map[string]any)["workers"] = chaosWorkers
	topo := clustertest.Topology{
		Root: root(), Bin: binDir, Nodes: 3, Shards: 2, Crawlers: 3, Config: cfg,
		CrawlerArgs: func(i int) []string {
			return []string{"--fetch-log", chaosFetchLog(out, i), "--warc-dir", chaosWARCDir(out, i)}
		},
	}
	events := topo.ChaosSchedule(seed, run.events, int64(len(want)))
	var sched strings.Builder
	for i, e := range events {
		fmt.Fprintf(&sched, "\n  %2d. %v", i+1, e)
	}
	t.Logf("chaos: -chaos=%s -chaos.seed=%d, %d reachable pages; schedule:%s", *chaosMode, seed, len(want), sched.String())

	c := clustertest.Start(t, topo)
	c.Seed(web.Seeds())
	start := time.Now()
	st := c.RunChaos(events, run.timeout, nil)
	t.Logf("chaos: %s crawl idle after %v: %d done, %d admitted", time.Now().UTC().Format("15:04:05.000"),
		time.Since(start).Round(time.Second), st.Done, st.Admitted)
	c.Stop() // graceful: crawlers close their logs and WARC files, frontiers checkpoint

	got := checkChaos(t, c, web, topo, out)
	kills := 0 // crawler kills
	for _, e := range events {
		if strings.HasPrefix(e.Victim, "crawler-") {
			kills++
		}
	}
	t.Logf("chaos: seed %d: %s", seed, got)
	// 0 pages lost: every reachable page done in the frontiers, and every
	// page done there in some fetch log and some WARC file.
	if got.notDone > 0 {
		t.Errorf("frontier: %d of %d reachable pages not done, e.g. %v", got.notDone, len(want), got.notDoneEx)
	}
	if got.notLogged > 0 {
		t.Errorf("fetch logs: %d of %d done pages have no line, e.g. %v", got.notLogged, got.done, got.notLoggedEx)
	}
	if got.notArchived > 0 {
		t.Errorf("WARC files: %d of %d done pages have no response record, e.g. %v", got.notArchived, got.done, got.notArchivedEx)
	}
	// At most 0.1% fetched twice, in the fetch logs and in the WARC files.
	limit := int(chaosMaxRepeated * float64(len(want)))
	t.Logf("chaos: repeated pages (fetch logs) e.g. %v; (WARC) e.g. %v", got.logRepeatedEx, got.warcRepeatedEx)
	if got.logRepeated > limit {
		t.Errorf("fetch logs: %d pages fetched more than once, over %.1f%% of %d (%d), e.g. %v",
			got.logRepeated, 100*chaosMaxRepeated, len(want), limit, got.logRepeatedEx)
	}
	if got.warcRepeated > limit {
		t.Errorf("WARC files: %d pages archived more than once, over %.1f%% of %d (%d), e.g. %v",
			got.warcRepeated, 100*chaosMaxRepeated, len(want), limit, got.warcRepeatedEx)
	}
	// A killed crawler's WARC file may end in a cut record (at most one
	// per kill); the next start in the directory finalizes it.
	if got.cutRecords > kills {
		t.Errorf("WARC files: %d cut or unreadable records, more than the %d crawler kills explain: %v", got.cutRecords, kills, got.cutEx)
	}
	if got.openFiles > 0 {
		t.Errorf("WARC files: %d .open files left after the crawlers stopped cleanly: %v", got.openFiles, got.openEx)
	}
	if got.rep.Fetched != got.rep.Want || len(got.rep.DisallowedFetches) > 0 {
		t.Errorf("synthetic web: %d of %d reachable pages fetched, %d robots violations", got.rep.Fetched, got.rep.Want, len(got.rep.DisallowedFetches))
	}
	if t.Failed() {
		t.Logf("chaos: replay with: go test ./e2e -run Chaos -chaos=%s -chaos.seed=%d -v", *chaosMode, seed)
	}
}

func chaosFetchLog(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("fetch-%d.jsonl", i))
}
func chaosWARCDir(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("warc-%d", i)) }
