package crawl

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

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
	return monitor.WriteText(w, s.Frontier, nil)
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
