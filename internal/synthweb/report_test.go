package synthweb

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// politeCrawl plays a correct crawler that already knows what to fetch:
// one goroutine per host fetches its robots.txt, then each of its URLs in
// urls once (retrying 5xx), pausing gap between requests.
func politeCrawl(t *testing.T, w *Web, urls []string, gap time.Duration) {
	t.Helper()
	byHost := map[string][]string{}
	for _, u := range urls {
		h := u[len("http://"):]
		h = h[:strings.IndexByte(h, '/')]
		byHost[h] = append(byHost[h], u)
	}
	c := w.Client()
	var wg sync.WaitGroup
	errs := make(chan string, len(byHost))
	for host, list := range byHost {
		wg.Go(func() {
			for _, u := range slices.Concat([]string{"http://" + host + "/robots.txt"}, list) {
				for try := 0; ; try++ {
					time.Sleep(gap)
					resp, err := c.Get(u)
					if err != nil {
						errs <- err.Error()
						return
					}
					resp.Body.Close()
					if resp.StatusCode < 500 {
						break
					}
					if try > 10 {
						errs <- u + ": keeps failing"
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestReportPerfectCrawl: 64 hosts crawled concurrently, each URL once,
// each host's robots.txt once, politely: Report finds nothing wrong.
func TestReportPerfectCrawl(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Hosts = 64
	cfg.PagesPerHost = 40
	cfg.Trap = true
	cfg.CrawlDelay = time.Millisecond
	w := startWeb(t, cfg)
	opts := ReportOptions{Truth: TruthOptions{MaxTrapDepth: 2}, Delay: 2 * time.Millisecond, MaxInFlight: 1}
	want := w.Reachable(opts.Truth)
	politeCrawl(t, w, want, 3*time.Millisecond)

	r := w.Report(opts)
	if ps := r.Problems(); len(ps) != 0 {
		t.Fatalf("Problems() = %q, want none", ps)
	}
	if r.Want != len(want) || r.Fetched != len(want) || len(r.Missed) != 0 {
		t.Errorf("Want %d Fetched %d Missed %d; want %d, %d, 0", r.Want, r.Fetched, len(r.Missed), len(want), len(want))
	}
	if r.Offered != len(want) || len(r.WronglySkipped) != 0 {
		t.Errorf("Offered %d, WronglySkipped %v; want %d and none", r.Offered, r.WronglySkipped, len(want))
	}
	if r.TrapPages != 3*cfg.Hosts || r.TrapDepth != 2 {
		t.Errorf("TrapPages %d TrapDepth %d; want %d, 2", r.TrapPages, r.TrapDepth, 3*cfg.Hosts)
	}
	if len(r.RobotsFetches) != cfg.Hosts || len(r.RobotsRepeated) != 0 || len(r.RobotsMissing) != 0 {
		t.Errorf("robots: %d hosts, repeated %v, missing %v", len(r.RobotsFetches), r.RobotsRepeated, r.RobotsMissing)
	}
	errPages := 0
	for _, u := range want {
		p, _ := w.pageOf(u)
		errPages += w.g.failures(p)
	}
	if r.ServerErrors != errPages || r.Requests != len(want)+cfg.Hosts+errPages {
		t.Errorf("ServerErrors %d Requests %d; want %d, %d", r.ServerErrors, r.Requests, errPages, len(want)+cfg.Hosts+errPages)
	}
	if r.MaxInFlight != 1 || r.Aborted != 0 {
		t.Errorf("MaxInFlight %d Aborted %d; want 1, 0", r.MaxInFlight, r.Aborted)
	}
	if r.MinInterval < 3*time.Millisecond || len(r.Hosts) != cfg.Hosts {
		t.Errorf("MinInterval %v over %d hosts; want at least 3ms over %d", r.MinInterval, len(r.Hosts), cfg.Hosts)
	}
}

// TestReportFlawedCrawl: a crawl with one fault of each kind is reported
// fault by fault.
func TestReportFlawedCrawl(t *testing.T) {
	cfg := smallConfig()
	w := startWeb(t, cfg)
	c := w.Client()
	opts := ReportOptions{Truth: TruthOptions{MaxTrapDepth: 1}, Delay: time.Hour}
	truth := w.Truth(opts.Truth)
	skipped := w.URL(1, "/p/"+itoa(plainPage(t, w, 1, 5)))
	twice := w.URL(2, "/p/"+itoa(plainPage(t, w, 2, 5)))
	forbidden := truth.Disallowed[0]
	fetch := func(u string) {
		for {
			if get(t, c, u).status < 500 {
				return
			}
		}
	}
	for h := range cfg.Hosts {
		fetch(w.URL(h, "/robots.txt"))
	}
	fetch(w.URL(0, "/robots.txt"))
	for _, u := range truth.Fetch() {
		if u != skipped {
			fetch(u)
		}
	}
	fetch(twice)
	fetch(forbidden)
	fetch(truth.TrapBeyond[0])
	fetch(w.URL(3, "/static/app.js"))
	fetch("http://h9.sim.test/")

	r := w.Report(opts)
	checks := []struct {
		name      string
		got, want any
	}{
		{"Missed", r.Missed, []string{skipped}},
		{"WronglySkipped", r.WronglySkipped, []string{skipped}},
		{"Repeated", r.Repeated, []URLCount{{twice, 2}}},
		{"DisallowedFetches", r.DisallowedFetches, []string{forbidden}},
		{"RobotsRepeated", r.RobotsRepeated, []string{"h0.sim.test"}},
		{"RobotsFetches[h0]", r.RobotsFetches["h0.sim.test"], 2},
		{"Unexpected", len(r.Unexpected), 0},
		{"TrapPages", r.TrapPages, 2*cfg.Hosts + 1},
		{"TrapDepth", r.TrapDepth, 2},
		{"EmbedFetches", r.EmbedFetches, 1},
		{"OffSite", r.OffSite, 1},
		{"Fetched", r.Fetched, r.Want - 1},
	}
	for _, c := range checks {
		if !equalAny(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// With an hour's delay every interval is a violation.
	wantViolations := 0
	for _, h := range r.Hosts {
		wantViolations += h.Requests - 1
	}
	if r.PolitenessViolations != wantViolations || wantViolations == 0 {
		t.Errorf("PolitenessViolations = %d, want %d", r.PolitenessViolations, wantViolations)
	}
	ps := strings.Join(r.Problems(), "\n")
	for _, s := range []string{"1 reachable urls never fetched: " + skipped, "1 urls fetched more than once: " + twice + " x2",
		"1 robots-disallowed urls fetched", "1 hosts with robots.txt fetched more than once: h0.sim.test", "politeness violations"} {
		if !strings.Contains(ps, s) {
			t.Errorf("Problems() lacks %q:\n%s", s, ps)
		}
	}

	// Without the delay, and ignoring robots.txt requests, no violations.
	r = w.Report(ReportOptions{Truth: opts.Truth, IgnoreRobotsTxt: true})
	if r.PolitenessViolations != 0 {
		t.Errorf("Delay 0: %d violations", r.PolitenessViolations)
	}
	// A depth-limited truth makes the deeper pages unexpected.
	r = w.Report(ReportOptions{Truth: TruthOptions{MaxDepth: 1, MaxTrapDepth: 1}})
	if len(r.Unexpected) == 0 {
		t.Error("MaxDepth 1: no unexpected fetches reported")
	}
}

func equalAny(a, b any) bool {
	switch a := a.(type) {
	case []string:
		return slices.Equal(a, b.([]string))
	case []URLCount:
		return slices.Equal(a, b.([]URLCount))
	}
	return a == b
}

// TestConcurrentRecording hammers one URL set from many goroutines; every
// request must be in the log exactly once with distinct attempt numbers.
func TestConcurrentRecording(t *testing.T) {
	cfg := smallConfig()
	cfg.ErrorRate = 0
	w := startWeb(t, cfg)
	c := w.Client()
	const workers, each = 64, 20
	u := w.URL(0, "/")
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				resp, err := c.Get(u)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d", resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	log := w.Requests()
	if len(log) != workers*each {
		t.Fatalf("log has %d records, want %d", len(log), workers*each)
	}
	for i, q := range log {
		if q.Attempt != i+1 {
			t.Fatalf("record %d has attempt %d, want %d", i, q.Attempt, i+1)
		}
	}
	r := w.Report(ReportOptions{})
	if len(r.Repeated) != 1 || r.Repeated[0].Count != workers*each {
		t.Errorf("Repeated = %v", r.Repeated)
	}
}

// TestReportInFlightAndAborted: three requests sleeping in one host's
// latency are three in flight; cut off by their clients, they are aborted
// and count as no fetch.
func TestReportInFlightAndAborted(t *testing.T) {
	cfg := smallConfig()
	cfg.Latency = time.Hour
	cfg.ErrorRate = 0
	w := startWeb(t, cfg)
	c := w.Client()
	u := w.URL(1, "/")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
				t.Error("a request sleeping for an hour was answered")
			}
		})
	}
	for len(w.Requests()) < 3 {
		time.Sleep(time.Millisecond)
	}
	r := w.Report(ReportOptions{MaxInFlight: 1})
	if r.MaxInFlight != 3 || !strings.Contains(strings.Join(r.Problems(), "\n"), "1 hosts with more than the allowed requests in flight: h1.sim.test (3)") {
		t.Errorf("MaxInFlight %d, Problems %q; want 3 and the host named", r.MaxInFlight, r.Problems())
	}
	cancel()
	wg.Wait()
	for w.Report(ReportOptions{}).Aborted < 3 {
		time.Sleep(time.Millisecond) // the server sees the clients leave
	}
	r = w.Report(ReportOptions{})
	if len(r.Repeated) != 0 || !slices.Contains(r.Missed, u) {
		t.Errorf("aborted requests counted as fetches: Repeated %v, %s missed: %v", r.Repeated, u, slices.Contains(r.Missed, u))
	}
	for _, q := range w.Requests() {
		if !q.Aborted {
			t.Errorf("request %+v not marked aborted", q)
		}
	}
}
