package crawl

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/trawlhq/trawl/internal/msg"
)

// Snapshot is what the progress line and the stop rule look at.
type Snapshot struct {
	At       time.Time
	Frontier msg.Status
	Fetched  uint64 // fetches completed by this process's workers
	Errors   uint64 // fetches that got no response
}

// progress prints the progress line: redrawn in place on a terminal, a
// plain line at most every logEvery otherwise.
type progress struct {
	w        io.Writer
	terminal bool
	logEvery time.Duration
	start    time.Time
	last     Snapshot
	lastLog  time.Time
}

func (p *progress) update(s Snapshot) {
	if p.w == nil {
		return
	}
	rate := 0.0
	if !p.last.At.IsZero() {
		if dt := s.At.Sub(p.last.At).Seconds(); dt > 0 {
			rate = float64(s.Fetched-p.last.Fetched) / dt
		}
	}
	p.last = s
	line := p.line(s, rate)
	if p.terminal {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		return
	}
	if s.At.Sub(p.lastLog) >= p.logEvery {
		p.lastLog = s.At
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) line(s Snapshot, rate float64) string {
	f := s.Frontier
	a := f.Audit
	var b strings.Builder
	fmt.Fprintf(&b, "%s  fetched %d  %.0f pages/s  queued %d  leased %d  dups %d  errors %d",
		s.At.Sub(p.start).Round(time.Second), s.Fetched, rate, f.Queued, f.Leased, f.Duplicates, s.Errors)
	fmt.Fprintf(&b, "  fp-skips %d/%d sampled (%.3f%%, 95%% %.3f-%.3f%%)", a.FPSkips, a.SampledNew+a.FPSkips, 100*a.Rate, 100*a.Low, 100*a.High)
	if r := f.Revisit; r != nil {
		fmt.Fprintf(&b, "  revisits %d (304 %d, changed %d)  due %d", r.Revisits, r.NotModified, r.Changed, r.Due)
	}
	return b.String()
}

// finish ends a redrawn line so later output starts on its own line.
func (p *progress) finish() {
	if p.w != nil && p.terminal {
		fmt.Fprintln(p.w)
	}
}

// idle reports whether the crawl has nothing left to do: nothing queued,
// nothing leased, and no message waiting in the stream for the frontier.
func idle(s msg.Status) bool { return s.Queued == 0 && s.Leased == 0 && s.Pending == 0 }
