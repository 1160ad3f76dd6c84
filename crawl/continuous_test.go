package crawl

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// A continuous crawl does not end when the frontier is idle: it runs
// until max_duration (or max_pages, or Ctrl-C), and its summary says so.
// The same site in once mode ends as done (TestRunCrawlsEverythingOnceAndResumes).
func TestRunContinuousRunsUntilStopped(t *testing.T) {
	web := startWeb(t, 2, 10, 0)
	cfg := testConfig(t, web, t.TempDir())
	cfg.Crawl.Mode = config.ModeContinuous
	cfg.Crawl.MaxDuration = 3 * time.Second
	cfg.Revisit.Initial, cfg.Revisit.Min, cfg.Revisit.Max = time.Second, 500*time.Millisecond, 10*time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	sum, err := Run(ctx, Options{Config: cfg, Progress: &out, LogEvery: time.Millisecond, Frontier: service.Options{AckWait: 5 * time.Second}})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if sum.StopReason != StopMaxDuration {
		t.Fatalf("stop reason %q, want %q (a continuous crawl is never done)", sum.StopReason, StopMaxDuration)
	}
	if rep := web.Report(synthweb.ReportOptions{}); rep.Fetched != rep.Want || rep.Want == 0 {
		t.Fatalf("fetched %d of %d reachable pages", rep.Fetched, rep.Want)
	}
}

// The summary of a continuous crawl says how its revisits ended; a once
// crawl's has no such line.
func TestSummaryRevisitLine(t *testing.T) {
	s := &Summary{StopReason: StopMaxDuration, Frontier: msg.Status{Revisit: &msg.RevisitStatus{
		Scheduled: 40, Due: 3, Revisits: 25, NotModified: 17, Changed: 5, Unchanged: 2}}}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "25 revisits: 17 not modified (304), 5 changed, 2 unchanged (same digest); 40 URLs scheduled, 3 due now"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	s.Frontier.Revisit = nil
	_ = s.WriteText(&b)
	if strings.Contains(b.String(), "revisits") {
		t.Errorf("a once crawl's summary mentions revisits:\n%s", b.String())
	}
}
