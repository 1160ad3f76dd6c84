package crawl

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/synthweb"
)

func TestDemoPasses(t *testing.T) {
	web := DemoWeb()
	web.Hosts, web.PagesPerHost = 4, 40
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Demo(ctx, DemoOptions{Web: web})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := res.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !res.OK() || !strings.Contains(out.String(), "result: PASS") {
		t.Fatalf("demo did not pass:\n%s", out.String())
	}
	if res.Report.Want == 0 || res.Report.Fetched != res.Report.Want || len(res.Report.WronglySkipped) != 0 {
		t.Fatalf("fetched %d of %d, %d wrongly skipped", res.Report.Fetched, res.Report.Want, len(res.Report.WronglySkipped))
	}
	if res.Report.MinInterval < DemoConfig().Politeness.MinDelay-2*time.Millisecond {
		t.Errorf("hosts fetched %v apart, faster than the %v delay", res.Report.MinInterval, DemoConfig().Politeness.MinDelay)
	}
}

// An overfilled filter wrongly skips URLs; with the whole key space
// audited the audit sees them, and the demo still judges the crawl correct
// (missed pages are explained by the skips, nothing else went wrong).
func TestDemoOverfilledFilter(t *testing.T) {
	web := DemoWeb()
	web.Hosts, web.PagesPerHost = 4, 60
	cfg := DemoConfig()
	cfg.Frontier.Filter.Mode = "fixed"
	cfg.Frontier.Filter.Capacity = 40
	cfg.Audit.Fraction = 1
	res, out := runDemo(t, web, cfg)
	a := res.Summary.Frontier.Audit
	if len(res.Report.WronglySkipped) == 0 || a.FPSkips == 0 {
		t.Fatalf("overfilled filter: %d wrongly skipped, audit %d skips\n%s", len(res.Report.WronglySkipped), a.FPSkips, out.String())
	}
	// Every URL the truth says was wrongly skipped was offered and is new,
	// so a full audit counts at least that many skips (it also counts
	// skipped robots-disallowed URLs, which the truth leaves out).
	if a.FPSkips < uint64(len(res.Report.WronglySkipped)) {
		t.Errorf("audit of the whole key space counted %d skips, the truth %d", a.FPSkips, len(res.Report.WronglySkipped))
	}
	if !res.OK() {
		t.Errorf("demo judged an overfilled but otherwise correct crawl wrong:\n%s", out.String())
	}
}

// runDemo runs Demo on web with cfg (within 2 minutes) and returns its
// result and text.
func runDemo(t *testing.T, web synthweb.Config, cfg config.Config) (*DemoResult, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Demo(ctx, DemoOptions{Web: web, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := res.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	return res, &out
}
