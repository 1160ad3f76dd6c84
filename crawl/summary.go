package crawl

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/internal/monitor"
	"github.com/trawlhq/trawl/internal/msg"
)

// Stop reasons.
const (
	StopDone        = "done"         // nothing queued or leased
	StopMaxPages    = "max-pages"    // crawl.max_pages reached
	StopMaxDuration = "max-duration" // crawl.max_duration reached
	StopInterrupted = "interrupted"  // SIGINT / SIGTERM (ctx cancelled)
)

// SummaryVersion is the version of the summary JSON document.
const SummaryVersion = 1

// Summary is the outcome of a one-command crawl, printed at the end and
// written as JSON with --summary-json.
type Summary struct {
	Version        int        `json:"version"`
	Started        time.Time  `json:"started"`
	Finished       time.Time  `json:"finished"`
	Seconds        float64    `json:"seconds"`
	StopReason     string     `json:"stop_reason"`
	Fetched        uint64     `json:"fetched"` // by this run's workers
	Errors         uint64     `json:"errors"`
	Sitemaps       uint64     `json:"sitemaps"` // sitemaps and feeds read for links
	PagesPerSecond float64    `json:"pages_per_second"`
	DataDir        string     `json:"data_dir"`
	NATS           string     `json:"nats,omitempty"` // the exposed NATS URL, if any
	Frontier       msg.Status `json:"frontier"`
	// Hints are advice drawn from how the crawl went, e.g. workers left
	// idle by the per-host limit.
	Hints []string `json:"hints,omitempty"`
	// Unreported counts the lease results (an outcome with its links, or
	// a lease given back) the workers could not publish by the end of
	// the shutdown (fetcher.WorkerStats.Unreported).
	Unreported uint64 `json:"unreported,omitempty"`
}

// finish fills the summary at the end of a crawl.
func (s *Summary) finish(reason string, ws fetcher.WorkerStats, final msg.Status, hints []string) {
	s.Finished = time.Now().UTC()
	s.Seconds = s.Finished.Sub(s.Started).Seconds()
	s.StopReason = reason
	s.Fetched = ws.Fetched - ws.Robots
	s.Errors = ws.Errors
	s.Sitemaps = ws.Sitemaps
	s.Unreported = ws.Unreported
	if s.Seconds > 0 {
		s.PagesPerSecond = float64(s.Fetched) / s.Seconds
	}
	s.Frontier = final
	s.Hints = hints
}

// WriteText prints the summary for people.
func (s *Summary) WriteText(w io.Writer) error {
	sitemaps := ""
	if s.Sitemaps > 0 {
		sitemaps = fmt.Sprintf(", %d sitemaps and feeds read", s.Sitemaps)
	}
	fmt.Fprintf(w, "crawl %s after %s: %d pages fetched (%.1f pages/s), %d errors%s; state in %s\n",
		s.StopReason, time.Duration(s.Seconds*float64(time.Second)).Round(time.Millisecond),
		s.Fetched, s.PagesPerSecond, s.Errors, sitemaps, s.DataDir)
	if line := revisitLine(s.Frontier.Revisit); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := givenUpLine(s.Frontier); line != "" {
		fmt.Fprintln(w, line)
	}
	if s.Unreported > 0 {
		fmt.Fprintf(w, "%d lease results not reported to the frontier (outcomes and their links, or leases given back, not acknowledged by JetStream at shutdown): their leases expire after frontier.lease_timeout and the URLs are fetched again\n", s.Unreported)
	}
	for _, h := range s.Hints {
		fmt.Fprintf(w, "hint: %s\n", h)
	}
	return monitor.WriteText(w, s.Frontier, nil)
}

// revisitLine says what a continuous crawl's revisits found: how many,
// and how they ended (304, a changed page, the same page again); "" for
// a crawl in once mode.
func revisitLine(r *msg.RevisitStatus) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%d revisits: %d not modified (304), %d changed, %d unchanged (same digest); %d URLs scheduled, %d due now",
		r.Revisits, r.NotModified, r.Changed, r.Unchanged, r.Scheduled, r.Due)
}

// givenUpLine says how many URLs ended without a fetch, by reason, and
// how many hosts were given up; "" when none.
func givenUpLine(st msg.Status) string {
	var n uint64
	var parts []string
	for _, r := range []string{"failed", "rate_limited", "unavailable", "host_gave_up", "robots_unavailable"} {
		if v := st.Finished[r]; v > 0 {
			n += v
			parts = append(parts, fmt.Sprintf("%d %s", v, r))
		}
	}
	if n == 0 && st.HostsGivenUp == 0 {
		return ""
	}
	line := fmt.Sprintf("%d URLs given up without a page (%s)", n, strings.Join(parts, ", "))
	if st.HostsGivenUp > 0 {
		line += fmt.Sprintf("; %d hosts given up after answering 429/503 again and again", st.HostsGivenUp)
	}
	return line
}

// WriteJSON writes the summary to path.
func (s *Summary) WriteJSON(path string) error {
	s.Version = SummaryVersion
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("crawl: summary: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("crawl: summary: %w", err)
	}
	return nil
}
