package crawl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/trawlhq/trawl/fetcher/warc"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// The continuous demo's targets (the issue's: the same as the synthetic
// web's simulation benchmark).
const (
	// NotModifiedTarget is the least share of revisits to unchanged pages,
	// on hosts that honour validators, that must end in 304.
	NotModifiedTarget = 0.95
	// UnchangedResponsesTarget is the most full response records the
	// archive may hold for pages that had not changed (they are revisit
	// records).
	UnchangedResponsesTarget = 0
	// OptimalShareTarget is the least share of the optimal policy's
	// freshness, at the crawl's own fetch rate, the crawl must reach; it
	// must also reach the uniform policy's.
	OptimalShareTarget = 0.9
)

// FreshnessCheck is a continuous crawl checked against the synthetic
// web's version history and against its own archive.
type FreshnessCheck struct {
	// Window is the synthetic web's freshness report over the run:
	// time-averaged freshness and age, and how its unchanged pages were
	// answered (304s on hosts that honour validators).
	Window synthweb.FreshnessReport
	// Revisit is the frontier's revisit status at the end (zero: the
	// frontier reported none).
	Revisit msg.RevisitStatus
	Archive ArchiveScan
	// Steady is the report over the run's last two thirds, once every page
	// has a first copy; Budget is its page fetches per second, and
	// Uniform and Optimal the steady-state freshness Cho and
	// Garcia-Molina's uniform and optimal policies reach on the web's
	// true change rates at that budget (revisit.PolicyFreshness).
	Steady           synthweb.FreshnessReport
	Budget           float64
	Uniform, Optimal float64
}

// ArchiveScan is what the WARC files of a crawl hold, per the fetcher's
// WARC reader.
type ArchiveScan struct {
	Files, Responses, Revisits int
	// UnchangedResponses counts the response records whose payload digest
	// equals the one the previous record for the same URL carried (by
	// WARC-Date): a page archived in full again though it had not
	// changed. Sample names a few of their URLs.
	UnchangedResponses int
	Sample             []string
}

// ScanArchive reads every finished WARC file (*.warc.gz, *.warc) in dir
// with the fetcher's strict reader. A file it cannot read is an error,
// not a skipped file: the check would otherwise pass on what it did not
// see. A directory that does not exist holds no records.
func ScanArchive(dir string) (ArchiveScan, error) {
	var s ArchiveScan
	type rec struct {
		date     time.Time
		response bool
		digest   string
	}
	byURL := map[string][]rec{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == dir {
				return fs.SkipAll
			}
			return err
		}
		gz := strings.HasSuffix(path, ".warc.gz")
		if d.IsDir() || !(gz || strings.HasSuffix(path, ".warc")) {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		s.Files++
		rd := warc.NewReader(f, gz, 0)
		for {
			r, err := rd.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			switch r.Type {
			case warc.TypeResponse:
				s.Responses++
			case "revisit":
				s.Revisits++
			default:
				continue
			}
			u := r.Get("WARC-Target-URI")
			byURL[u] = append(byURL[u], rec{r.Date, r.Type == warc.TypeResponse, r.Get("WARC-Payload-Digest")})
		}
	})
	if err != nil {
		return s, fmt.Errorf("crawl: reading the archive: %w", err)
	}
	urls := make([]string, 0, len(byURL))
	for u := range byURL {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	for _, u := range urls {
		rs := byURL[u]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].date.Before(rs[j].date) })
		last := "" // the last digest a record of u carried (a 304's revisit may carry none)
		for _, r := range rs {
			if r.response && r.digest != "" && r.digest == last {
				s.UnchangedResponses++
				if len(s.Sample) < 3 && !slices.Contains(s.Sample, u) {
					s.Sample = append(s.Sample, u)
				}
			}
			if r.digest != "" {
				last = r.digest
			}
		}
	}
	return s, nil
}

// Problems lists the targets c misses; none means PASS.
func (c *FreshnessCheck) Problems() []string {
	var p []string
	if c.Revisit.Revisits == 0 {
		p = append(p, "no revisits: the frontier scheduled none (is crawl.mode continuous, and does the frontier report its revisit status?)")
	}
	if c.Window.UnchangedRevisits == 0 {
		p = append(p, "no revisit of an unchanged page on a host with validators: the 304 target could not be measured")
	} else if got := c.Window.NotModifiedShare(); got < NotModifiedTarget {
		p = append(p, fmt.Sprintf("%.1f%% of revisits to unchanged pages on validator hosts ended in 304, target >= %.0f%%", 100*got, 100*NotModifiedTarget))
	}
	if c.Archive.UnchangedResponses > UnchangedResponsesTarget {
		p = append(p, fmt.Sprintf("%d full response records for unchanged pages in the archive%s, target %d", c.Archive.UnchangedResponses, sampleList(c.Archive.Sample), UnchangedResponsesTarget))
	}
	if c.Steady.Freshness < c.Uniform {
		p = append(p, fmt.Sprintf("freshness %.1f%% is below the uniform policy's %.1f%% at the same %.1f fetches/s", 100*c.Steady.Freshness, 100*c.Uniform, c.Budget))
	}
	if c.Steady.Freshness < OptimalShareTarget*c.Optimal {
		p = append(p, fmt.Sprintf("freshness %.1f%% is below %.0f%% of the optimal policy's %.1f%% at the same %.1f fetches/s", 100*c.Steady.Freshness, 100*OptimalShareTarget, 100*c.Optimal, c.Budget))
	}
	if c.Window.Truncated {
		p = append(p, "the synthetic web's request log was truncated: the freshness figures are partial")
	}
	return p
}

// WriteText prints the check, PASS or FAIL per target.
func (c *FreshnessCheck) WriteText(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	win, r := c.Window, c.Revisit
	p("\nfreshness over the run (%s, against the web's version history):\n", win.To.Sub(win.From).Round(time.Second))
	p("  pages that change         %d (%d with a copy at the end), %d changes in the run\n", win.Pages, win.Fetched, win.Changes)
	p("  time-averaged freshness   %.1f%% (pages never fetched count as stale)\n", 100*win.Freshness)
	p("  mean age of the copies    %v\n", win.MeanAge.Round(time.Millisecond))
	st := c.Steady
	p("  last two thirds (%s)     freshness %.1f%% at %.1f page fetches/s\n", st.To.Sub(st.From).Round(time.Second), 100*st.Freshness, c.Budget)
	p("  uniform policy, same rate %.1f%% (trawl at least that): %s\n", 100*c.Uniform, verdict(st.Freshness >= c.Uniform))
	p("  optimal policy, same rate %.1f%% (trawl at least %.0f%% of it, %.1f%%): %s\n", 100*c.Optimal, 100*OptimalShareTarget,
		100*OptimalShareTarget*c.Optimal, verdict(st.Freshness >= OptimalShareTarget*c.Optimal))
	p("  estimated by the frontier %.1f%% of %d scheduled URLs\n", 100*r.Freshness, r.Scheduled)
	p("  revisits                  %d leased: %d not modified (304), %d changed, %d unchanged\n", r.Revisits, r.NotModified, r.Changed, r.Unchanged)
	p("  %-25s %d page fetches (200 or 304), %d answered 304\n", "served", win.Fetches, win.NotModified)
	p("  304 for unchanged pages   %d of %d revisits on validator hosts, %.1f%% (target >= %.0f%%): %s\n",
		win.UnchangedRevisits304, win.UnchangedRevisits, 100*win.NotModifiedShare(), 100*NotModifiedTarget,
		verdict(win.UnchangedRevisits > 0 && win.NotModifiedShare() >= NotModifiedTarget))
	a := c.Archive
	p("  archive                   %d WARC files: %d response, %d revisit records\n", a.Files, a.Responses, a.Revisits)
	p("  full records, unchanged   %d (target %d)%s: %s\n", a.UnchangedResponses, UnchangedResponsesTarget, sampleList(a.Sample),
		verdict(a.UnchangedResponses <= UnchangedResponsesTarget))
	p("  revisits happened         %d: %s\n", r.Revisits, verdict(r.Revisits > 0))
}
