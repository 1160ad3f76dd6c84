package crawl

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// A continuous crawl does not end when the frontier is idle: it runs
// until Ctrl-C (or max_duration, or max_pages). The same site in once
// mode ends as done (TestRunCrawlsEverythingOnceAndResumes).
func TestRunContinuousRunsUntilStopped(t *testing.T) {
	web := startWeb(t, 2, 10, 0)
	cfg := testConfig(t, web, t.TempDir())
	cfg.Crawl.Mode = config.ModeContinuous
	cfg.Revisit.Initial, cfg.Revisit.Min, cfg.Revisit.Max = time.Minute, time.Minute, time.Hour
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	crawlCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := runAsync(crawlCtx, cfg)
	// Every page fetched: a once crawl would end within two polls (25 ms
	// each) of its frontier seeing the last outcome.
	for rep := web.Report(synthweb.ReportOptions{}); rep.Want == 0 || rep.Fetched < rep.Want; rep = web.Report(synthweb.ReportOptions{}) {
		select {
		case r := <-done:
			t.Fatalf("the crawl ended (%v, %+v) after %d of %d pages", r.err, r.sum, rep.Fetched, rep.Want)
		case <-ctx.Done():
			t.Fatalf("fetched %d of %d pages", rep.Fetched, rep.Want)
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case r := <-done:
		t.Fatalf("a continuous crawl ended by itself: %v, stop reason %q", r.err, r.sum.StopReason)
	case <-time.After(time.Second):
	}
	stop()
	if r := <-done; r.err != nil || r.sum.StopReason != StopInterrupted {
		t.Fatalf("Run: %v, stop reason %q, want %q", r.err, r.sum.StopReason, StopInterrupted)
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

// The progress line of a continuous crawl shows its revisits; a once
// crawl's does not.
func TestProgressLineRevisits(t *testing.T) {
	p := &progress{start: time.Now()}
	s := Snapshot{At: time.Now(), Frontier: msg.Status{Revisit: &msg.RevisitStatus{Revisits: 9, NotModified: 6, Changed: 2, Due: 4}}}
	if got, want := p.line(s, 0), "revisits 9 (304 6, changed 2)  due 4"; !strings.Contains(got, want) {
		t.Errorf("progress line %q lacks %q", got, want)
	}
	s.Frontier.Revisit = nil
	if got := p.line(s, 0); strings.Contains(got, "revisits") {
		t.Errorf("a once crawl's progress line mentions revisits: %q", got)
	}
}
