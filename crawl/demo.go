package crawl

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/revisit"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// DemoOptions configures Demo.
type DemoOptions struct {
	// Web is the synthetic web to crawl (synthweb.DefaultConfig() with
	// more hosts when zero).
	Web synthweb.Config
	// Config is the crawl's configuration; Demo points it at the web
	// (seeds, resolve, allow_private_networks). Zero: DemoConfig().
	Config config.Config
	// KeepData keeps Config.DataDir; otherwise a temporary directory is used
	// and removed.
	KeepData bool
	Logger   *slog.Logger
	Progress io.Writer
	Terminal bool
}

// DemoConfig is the configuration `crawler demo` starts from: the default
// scalable filter measured against a capacity of 1e6 (--capacity with a
// fixed filter shows an overfilled one), no politeness delay beyond 20 ms, 32 workers, and the local status
// page off.
func DemoConfig() config.Config {
	cfg := config.Default()
	cfg.Frontier.Filter.Capacity = 1_000_000
	cfg.Frontier.MetricsAddr = ""
	cfg.Politeness.MinDelay = 20 * time.Millisecond
	cfg.Politeness.DelayFactor = 0
	cfg.Politeness.BackoffBase = 50 * time.Millisecond
	cfg.Crawler.Workers = 32
	return cfg
}

// DemoWeb is the synthetic web `crawler demo` crawls: 20 hosts x 100
// pages with every feature of synthweb.DefaultConfig, plus 5 pages per
// host that only the host's sitemap lists (robots.txt names a sitemap
// index of one urlset).
func DemoWeb() synthweb.Config {
	w := synthweb.DefaultConfig()
	w.Hosts, w.PagesPerHost = 20, 100
	w.SitemapPages = 5
	return w
}

// DemoChanges are the page changes of `crawler demo --continuous`: a
// wide mix within a 60 s run (mean change intervals log-uniform from 2 s
// to 10 min, so about 60% of the pages change more often than once a
// minute), a fifth of the pages never changing, a fifth of the hosts
// ignoring validators, and lastmod in the sitemaps.
func DemoChanges() synthweb.ChangeConfig {
	return synthweb.ChangeConfig{MinInterval: 2 * time.Second, MaxInterval: 10 * time.Minute,
		NeverFraction: 0.2, NoValidatorsFraction: 0.2, SitemapLastmod: true}
}

// DemoRevisit is the revisit schedule of `crawler demo --continuous`,
// scaled to a run of a minute rather than the defaults' days: min 1 s
// (the synthetic web's changes fall on whole seconds, so a shorter
// interval could only see the same version again), initial 5 s (a page
// is visited about ten times in the run, enough for the interval to move
// several steps from where it started) and max 60 s (the run's length:
// a page that never changes is still revisited within the run, which is
// what the 304 and revisit-record targets measure). Sitemaps every 10 s.
func DemoRevisit() config.Revisit {
	r := config.Default().Revisit
	r.Min, r.Initial, r.Max, r.Sitemaps = time.Second, 5*time.Second, time.Minute, 10*time.Second
	return r
}

// DemoDuration is how long `crawler demo --continuous` runs when
// crawl.max_duration is not set.
const DemoDuration = time.Minute

// DemoResult is a demo crawl and its check against the ground truth.
type DemoResult struct {
	Web     synthweb.Config
	Summary *Summary
	Report  *synthweb.Report
	Delay   time.Duration // the politeness delay checked
	// TrueSkipRate is the share of the URLs the crawl was offered that it
	// never fetched (WronglySkipped / Offered): the false-positive skip rate
	// the audit estimates.
	TrueSkipRate float64
	// Fresh is the continuous demo's check (crawl.mode continuous): nil
	// for a crawl in once mode.
	Fresh *FreshnessCheck
}

// Demo serves a synthetic web on loopback, crawls it with Run and checks
// the crawl against the web's ground truth. With crawl.mode continuous
// the web's pages change (DemoChanges, unless opts.Web.Changes is set),
// the crawl revisits them (DemoRevisit, unless the revisit section was
// changed from its defaults) for crawl.max_duration (DemoDuration when
// 0) and archives to data_dir/warc (unless crawler.warc_dir is set), and
// the check is the freshness check (Fresh).
func Demo(ctx context.Context, opts DemoOptions) (*DemoResult, error) {
	if opts.Web.Hosts == 0 {
		opts.Web = DemoWeb()
	}
	cfg := opts.Config
	if cfg.DataDir == "" {
		cfg = DemoConfig()
	}
	continuous := cfg.Crawl.Continuous()
	if continuous {
		if !opts.Web.Changes.Enabled() {
			opts.Web.Changes = DemoChanges()
		}
		if cfg.Revisit.Initial == config.Default().Revisit.Initial && cfg.Revisit.Min == config.Default().Revisit.Min {
			cfg.Revisit = DemoRevisit()
		}
		if cfg.Crawl.MaxDuration == 0 {
			cfg.Crawl.MaxDuration = DemoDuration
		}
	}
	if !opts.KeepData {
		dir, err := os.MkdirTemp("", "trawl-demo-")
		if err != nil {
			return nil, fmt.Errorf("crawl: demo: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	web, err := synthweb.Start(ctx, opts.Web)
	if err != nil {
		return nil, err
	}
	defer web.Close()
	cfg.Crawl.Seeds = web.Seeds()
	cfg.Crawler.Resolve = web.Resolve()
	cfg.Crawler.AllowPrivateNetworks = true
	cfg.Frontier.Shard, cfg.Frontier.Shards = 0, 1
	if continuous && cfg.Crawler.WARCDir == "" {
		cfg.Crawler.WARCDir = filepath.Join(cfg.DataDir, "warc")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	sum, err := Run(ctx, Options{Config: cfg, Logger: opts.Logger, Progress: opts.Progress, Terminal: opts.Terminal,
		Frontier: service.Options{AckWait: 10 * time.Second}})
	if err != nil {
		return &DemoResult{Web: opts.Web, Summary: sum}, err
	}
	res := &DemoResult{Web: opts.Web, Summary: sum, Delay: cfg.Politeness.MinDelay}
	if continuous {
		if res.Fresh, err = freshnessCheck(web, opts.Web, cfg, start, sum); err != nil {
			return res, err
		}
	}
	res.Report = web.Report(synthweb.ReportOptions{Delay: cfg.Politeness.MinDelay, Tolerance: 2 * time.Millisecond,
		MaxInFlight: cfg.Frontier.MaxInflightPerHost})
	if res.Report.Offered > 0 {
		res.TrueSkipRate = float64(len(res.Report.WronglySkipped)) / float64(res.Report.Offered)
	}
	return res, nil
}

// freshnessCheck checks a continuous crawl that ran from start: the
// web's freshness report over the run, the frontier's revisit status,
// and the archive.
func freshnessCheck(web *synthweb.Web, webCfg synthweb.Config, cfg config.Config, start time.Time, sum *Summary) (*FreshnessCheck, error) {
	c := &FreshnessCheck{Window: web.Freshness(start, sum.Finished)}
	c.Steady = web.Freshness(start.Add(sum.Finished.Sub(start)/3), sum.Finished)
	if secs := c.Steady.To.Sub(c.Steady.From).Seconds(); secs > 0 {
		c.Budget = float64(c.Steady.Fetches) / secs
	}
	means, err := synthweb.MeanChangeIntervals(webCfg)
	if err != nil {
		return c, err
	}
	if len(means) != c.Steady.Pages {
		return c, fmt.Errorf("crawl: demo: %d change rates for %d pages", len(means), c.Steady.Pages)
	}
	rates := make([]float64, len(means))
	for i, m := range means {
		if m > 0 {
			rates[i] = 1 / m.Seconds()
		}
	}
	c.Uniform, c.Optimal = revisit.PolicyFreshness(rates, c.Budget)
	if r := sum.Frontier.Revisit; r != nil {
		c.Revisit = *r
	}
	c.Archive, err = ScanArchive(cfg.Crawler.WARCDir)
	return c, err
}

// OK reports whether the crawl was correct: nothing fetched twice, no
// robots or politeness violation, and every reachable page fetched unless
// the filter wrongly skipped URLs (then the missed pages are the price of
// an overfilled filter, which the audit is there to measure). A crawl that
// stopped early (max-pages, max-duration, interrupted) is not judged on
// missed pages.
//
// A continuous crawl fetches pages again by design: it is correct when
// nothing broke robots or politeness and the freshness check passes.
func (r *DemoResult) OK() bool {
	rep := r.Report
	if rep == nil || len(rep.DisallowedFetches) > 0 || rep.PolitenessViolations > 0 || len(rep.RobotsRepeated) > 0 || rep.Truncated {
		return false
	}
	if r.Fresh != nil {
		return len(r.Fresh.Problems()) == 0
	}
	if len(rep.Repeated) > 0 {
		return false
	}
	if r.Summary.StopReason != StopDone {
		return true
	}
	return len(rep.Missed) == 0 || len(rep.WronglySkipped) > 0
}

// WriteText prints the check for people.
func (r *DemoResult) WriteText(w io.Writer) error {
	rep, a := r.Report, r.Summary.Frontier.Audit
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("synthetic web: %d hosts x %d pages (seed %d)\n", r.Web.Hosts, r.Web.PagesPerHost, r.Web.Seed)
	if err := r.Summary.WriteText(w); err != nil {
		return err
	}
	p("\ncheck against the ground truth:\n")
	p("  reachable pages           %d\n", rep.Want)
	p("  fetched                   %d\n", rep.Fetched)
	p("  missed                    %d%s\n", len(rep.Missed), sampleList(rep.Missed))
	if r.Fresh == nil { // a continuous crawl fetches pages again by design
		p("  fetched more than once    %d\n", len(rep.Repeated))
	}
	p("  robots.txt fetches        %d for %d hosts (repeated on %d)\n", sum(rep.RobotsFetches), len(rep.RobotsFetches), len(rep.RobotsRepeated))
	p("  robots violations         %d\n", len(rep.DisallowedFetches))
	p("  politeness violations     %d (delay %v; least interval seen %v; most in flight per host %d)\n",
		rep.PolitenessViolations, r.Delay, rep.MinInterval, rep.MaxInFlight)
	p("  false-positive skips      audit: %d of %d sampled new keys, %.3f%% (95%% interval %.3f%% - %.3f%%)\n",
		a.FPSkips, a.SampledNew+a.FPSkips, 100*a.Rate, 100*a.Low, 100*a.High)
	p("                            truth: %d of %d offered URLs never fetched, %.3f%%; implied by the filter's fill %.4f%%\n",
		len(rep.WronglySkipped), rep.Offered, 100*r.TrueSkipRate, 100*r.Summary.Frontier.Filter.ImpliedFP)
	problems := rep.Problems()
	if r.Fresh != nil {
		r.Fresh.WriteText(w)
		problems = r.Fresh.Problems()
		for _, l := range rep.Problems() {
			if !strings.Contains(l, " urls fetched more than once: ") && !strings.Contains(l, " reachable urls never fetched: ") {
				problems = append(problems, l)
			}
		}
	}
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
		for _, line := range problems {
			p("  problem: %s\n", line)
		}
	}
	p("result: %s\n", verdict)
	return nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sampleList(l []string) string {
	if len(l) == 0 {
		return ""
	}
	if len(l) > 3 {
		return fmt.Sprintf(" (e.g. %s, ...)", l[0])
	}
	return fmt.Sprintf(" %v", l)
}
