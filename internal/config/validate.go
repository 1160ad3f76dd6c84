package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/parser"
)

// FieldError is one invalid key.
type FieldError struct {
	Path   string // the key path, e.g. frontier.filter.fp
	Origin string // where the value came from: "file.yaml:12", "env TRAWL_X", "flag"; "" for a default
	Msg    string
}

func (e FieldError) Error() string {
	if e.Origin != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Path, e.Msg, e.Origin)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Errors is every invalid key Validate found.
type Errors []FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = "  " + e.Error()
	}
	return fmt.Sprintf("config: %d invalid field(s):\n%s", len(es), strings.Join(lines, "\n"))
}

// Validate reports every invalid field at once (an Errors), or nil. It is
// the one validation every command runs: values another package defines
// (the filter layouts, the canonical rules) are checked by that package's
// own parser, so the two cannot disagree.
func (c *Config) Validate() error {
	v := validator{c: c}
	c.validate(&v)
	if len(v.errs) == 0 {
		return nil
	}
	return v.errs
}

type validator struct {
	c    *Config
	errs Errors
}

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, FieldError{Path: path, Origin: v.c.Origin(path), Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) check(ok bool, path, format string, args ...any) {
	if !ok {
		v.add(path, format, args...)
	}
}

func (v *validator) positive(d time.Duration, path string) {
	v.check(d > 0, path, "must be a positive duration, got %v", d)
}

func (v *validator) nonNegative(d time.Duration, path string) {
	v.check(d >= 0, path, "must not be negative, got %v", d)
}

func (v *validator) between(n, lo, hi int64, path string) {
	v.check(n >= lo && n <= hi, path, "must be between %d and %d, got %d", lo, hi, n)
}

func (v *validator) oneOf(s, path string, allowed ...string) {
	for _, a := range allowed {
		if s == a {
			return
		}
	}
	v.add(path, "must be one of %s, got %q", strings.Join(allowed, ", "), s)
}

func (v *validator) addr(s, path string) {
	if s == "" {
		return
	}
	if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
		v.add(path, "must be host:port (e.g. 127.0.0.1:9464), got %q", s)
	}
}

// natsToken matches a NATS subject token or stream name.
var natsToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// validate checks every section in order, so errors come out in the order
// the keys appear in the config file.
func (c *Config) validate(v *validator) {
	v.check(c.DataDir != "", "data_dir", "must not be empty")
	v.oneOf(c.Log.Level, "log.level", "debug", "info", "warn", "error")
	v.oneOf(c.Log.Format, "log.format", "text", "json")
	v.nats(c.NATS)
	v.frontier(c.Frontier)
	v.politeness(c.Politeness)
	v.positive(c.Robots.TTL, "robots.ttl")
	v.scope(c.Scope)
	v.check(c.Audit.Fraction > 0 && c.Audit.Fraction <= 1, "audit.fraction", "must be in (0, 1], got %v", c.Audit.Fraction)
	v.crawler(c.Crawler)
	v.crawl(c.Crawl, c.Scope.MaxURLLength)
	v.revisit(c.Revisit)
}

func (v *validator) nats(n NATS) {
	v.check(natsToken.MatchString(n.Stream), "nats.stream", "must be letters, digits, '-' or '_', got %q", n.Stream)
	v.check(natsToken.MatchString(n.Prefix), "nats.prefix", "must be one subject token (letters, digits, '-' or '_'), got %q", n.Prefix)
	v.between(int64(n.Replicas), 1, 5, "nats.replicas")
	v.check((n.TLSCert == "") == (n.TLSKey == ""), "nats.tls_cert", "tls_cert and tls_key go together")
	if n.Expose != "" {
		v.addr(n.Expose, "nats.expose")
	}
	for _, u := range strings.Split(n.URL, ",") {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || p.Host == "" {
			v.add("nats.url", "must be nats://host:port[,...], got %q", u)
		}
	}
}

func (v *validator) frontier(f Frontier) {
	v.between(int64(f.Shards), 1, 1024, "frontier.shards")
	v.check(f.Shard >= 0 && f.Shard < max(f.Shards, 1), "frontier.shard", "must be in [0, shards=%d), got %d", f.Shards, f.Shard)
	v.filter(f.Filter)
	v.positive(f.CheckpointInterval, "frontier.checkpoint_interval")
	v.check(f.LeaseTimeout >= time.Second, "frontier.lease_timeout", "must be at least 1s, got %v", f.LeaseTimeout)
	v.between(int64(f.MaxInflightPerHost), 1, 1000, "frontier.max_inflight_per_host")
	v.between(int64(f.MaxLeasesPerReply), 1, 10_000, "frontier.max_leases_per_reply")
	v.check(f.CommitInterval > 0 && f.CommitInterval <= 10*time.Second, "frontier.commit_interval", "must be in (0, 10s], got %v", f.CommitInterval)
	v.addr(f.MetricsAddr, "frontier.metrics_addr")
	v.check(f.HeadCache >= 0, "frontier.head_cache", "must not be negative")
	v.check(f.CheckpointPart > 0, "frontier.checkpoint_part", "must be at least 1 byte (one chunk a transaction), got %d", f.CheckpointPart)
}

func (v *validator) filter(f Filter) {
	v.check(f.Capacity > 0, "frontier.filter.capacity", "must be at least 1")
	v.check(f.FP > 0 && f.FP < 1, "frontier.filter.fp", "must be in (0, 1), got %v", f.FP)
	if _, err := dedup.ParseLayout(f.Layout); err != nil {
		v.add("frontier.filter.layout", "%v", err)
	}
	if _, err := dedup.ParseMode(f.Mode); err != nil {
		v.add("frontier.filter.mode", "%v", err)
	}
	v.check(f.Initial > 0, "frontier.filter.initial", "must be at least 1")
	v.check(f.MaxMemory >= 0, "frontier.filter.max_memory", "must not be negative")
	// dedup's own check, one setting at a time so the error names it (a
	// zero there would mean "dedup's default", so it is refused here).
	v.check(f.Growth != 0, "frontier.filter.growth", "must be set")
	if err := (dedup.ChainConfig{Growth: f.Growth}).Validate(); err != nil {
		v.add("frontier.filter.growth", "%v", err)
	}
	v.check(f.Tightening != 0, "frontier.filter.tightening", "must be set")
	if err := (dedup.ChainConfig{Tightening: f.Tightening}).Validate(); err != nil {
		v.add("frontier.filter.tightening", "%v", err)
	}
}

func (v *validator) politeness(p Politeness) {
	v.nonNegative(p.MinDelay, "politeness.min_delay")
	v.nonNegative(p.MaxCrawlDelay, "politeness.max_crawl_delay")
	v.check(p.DelayFactor >= 0 && p.DelayFactor <= 1000, "politeness.delay_factor", "must be in [0, 1000], got %v", p.DelayFactor)
	v.positive(p.BackoffBase, "politeness.backoff_base")
	v.check(p.BackoffMax >= p.BackoffBase, "politeness.backoff_max", "must be at least backoff_base (%v), got %v", p.BackoffBase, p.BackoffMax)
	v.between(int64(p.ErrorStreak), 1, 1_000_000, "politeness.error_streak")
	v.nonNegative(p.ErrorPause, "politeness.error_pause")
	v.between(int64(p.MaxRetries), 0, 100, "politeness.max_retries")
	v.between(int64(p.HostGiveUp), 0, 64, "politeness.host_give_up")
}

func (v *validator) scope(s Scope) {
	if _, err := parser.ParseRules(s.Canonical); err != nil {
		v.add("scope.canonical", "%v", err)
	}
	v.domains(s.AllowedDomains, "scope.allowed_domains")
	v.domains(s.BlockedDomains, "scope.blocked_domains")
	v.regexps(s.Include, "scope.include")
	v.regexps(s.Exclude, "scope.exclude")
	v.between(int64(s.MaxDepth), 0, 1_000_000, "scope.max_depth")
	v.between(int64(s.MaxRedirects), 0, 1000, "scope.max_redirects")
	v.check(s.MaxPagesPerHost >= 0, "scope.max_pages_per_host", "must not be negative")
	v.between(int64(s.MaxURLLength), 16, 64<<10, "scope.max_url_length")
	v.between(int64(s.MaxRepeatedSegments), 0, 1000, "scope.max_repeated_segments")
	v.between(int64(s.MaxLinksPerPage), 1, 100_000, "scope.max_links_per_page")
}

func (v *validator) domains(ds []string, path string) {
	for i, d := range ds {
		v.check(validDomain(d), path, "entry %d: %q is not a host name or suffix", i, d)
	}
}

func (v *validator) regexps(res []string, path string) {
	for i, re := range res {
		if _, err := regexp.Compile(re); err != nil {
			v.add(path, "entry %d: %v", i, err)
		}
	}
}

func (v *validator) crawler(w Crawler) {
	v.between(int64(w.Workers), 1, 100_000, "crawler.workers")
	v.between(int64(w.LeaseBatch), 1, 10_000, "crawler.lease_batch")
	v.check(strings.TrimSpace(w.UserAgent) != "", "crawler.user_agent", "must not be empty")
	v.check(w.MaxBody >= 1<<10, "crawler.max_body", "must be at least 1KiB, got %v", w.MaxBody)
	v.positive(w.FetchTimeout, "crawler.fetch_timeout")
	v.positive(w.ConnectTimeout, "crawler.connect_timeout")
	v.positive(w.TLSTimeout, "crawler.tls_timeout")
	v.positive(w.HeaderTimeout, "crawler.header_timeout")
	v.check(w.IdlePerHost >= 0, "crawler.idle_per_host", "must not be negative")
	v.check(w.IdleTotal >= 0, "crawler.idle_total", "must not be negative")
	v.between(int64(w.LinkCache), 0, 1<<31, "crawler.link_cache")
	v.nonNegative(w.DNSCacheTTL, "crawler.dns_cache_ttl")
	v.resolve(w.Resolve)
	v.check(w.WARCMaxSize >= 1<<20, "crawler.warc_max_size", "must be at least 1MiB, got %v", w.WARCMaxSize)
	v.oneOf(w.ArchiveSync, "crawler.archive_sync", ArchiveSyncNone, ArchiveSyncInterval, ArchiveSyncAlways)
	v.nonNegative(w.ShutdownGrace, "crawler.shutdown_grace")
	v.addr(w.MetricsAddr, "crawler.metrics_addr")
}

func (v *validator) resolve(m map[string]string) {
	for from, to := range m {
		if _, _, err := net.SplitHostPort(from); err != nil {
			v.add("crawler.resolve", "key %q must be host:port", from)
		}
		if h, _, err := net.SplitHostPort(to); err != nil || net.ParseIP(h) == nil {
			v.add("crawler.resolve", "value for %q must be ip:port, got %q", from, to)
		}
	}
}

func (v *validator) crawl(cr Crawl, maxURLLength int) {
	for i, s := range cr.Seeds {
		if err := CheckSeed(s, maxURLLength); err != nil {
			v.add("crawl.seeds", "entry %d: %v", i, err)
		}
	}
	v.oneOf(cr.Mode, "crawl.mode", ModeOnce, ModeContinuous)
	v.check(cr.MaxPages >= 0, "crawl.max_pages", "must not be negative")
	v.nonNegative(cr.MaxDuration, "crawl.max_duration")
	v.positive(cr.Progress, "crawl.progress")
}

// RevisitPolicies are the revisit.policy values package revisit knows
// (revisit.New refuses any other; a test holds the two to one answer).
var RevisitPolicies = []string{"adaptive", "uniform"}

// revisit checks the revisit section whatever crawl.mode is, so that a
// bad value is found before the crawl that would use it. Package revisit
// imports this one, so its constructor cannot be called here: the
// patterns are compiled with the same regexp.Compile it uses.
func (v *validator) revisit(r Revisit) {
	v.positive(r.Min, "revisit.min")
	v.check(r.Max >= r.Min, "revisit.max", "must be at least revisit.min (%v), got %v", r.Min, r.Max)
	v.check(r.Initial >= r.Min && r.Initial <= r.Max, "revisit.initial", "must be between revisit.min (%v) and revisit.max (%v), got %v", r.Min, r.Max, r.Initial)
	v.positive(r.Sitemaps, "revisit.sitemaps")
	v.check(r.Share >= 0 && r.Share <= 1, "revisit.share", "must be in [0, 1], got %v", r.Share)
	v.oneOf(r.Policy, "revisit.policy", RevisitPolicies...)
	for i, o := range r.Overrides {
		v.check(o.Pattern != "" || o.ContentType != "", "revisit.overrides", "entry %d: needs a pattern or a content_type to match", i)
		if _, err := regexp.Compile(o.Pattern); err != nil {
			v.add("revisit.overrides", "entry %d: pattern: %v", i, err)
		}
		v.check(o.Initial >= 0 && o.Min >= 0 && o.Max >= 0, "revisit.overrides", "entry %d: durations must not be negative", i)
		v.check(o.Min == 0 || o.Max == 0 || o.Min <= o.Max, "revisit.overrides", "entry %d: min (%v) above max (%v)", i, o.Min, o.Max)
	}
}

var domainRE = regexp.MustCompile(`^\.?([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]*[a-z0-9])?\.?$`)

func validDomain(d string) bool { return domainRE.MatchString(strings.ToLower(d)) }

// CheckSeed says why raw cannot be a seed, or nil: it must be what
// parser.Canonical accepts (an absolute http(s) URL by the WHATWG URL
// standard, port in range; the same test `crawler urlkey` applies), not
// on port 0, and no longer than maxLen bytes (scope.max_url_length), raw
// or canonical. The
// private network guard needs DNS and is the crawl's (crawl.CheckSeeds).
func CheckSeed(raw string, maxLen int) error {
	if maxLen > 0 && len(raw) > maxLen {
		return fmt.Errorf("a seed of %d bytes is longer than scope.max_url_length (%d)", len(raw), maxLen)
	}
	key, err := parser.Canonical(raw, 0)
	if err != nil {
		return fmt.Errorf("%.200q: %w", raw, err)
	}
	if maxLen > 0 && len(key) > maxLen {
		return fmt.Errorf("%.200q: its canonical form of %d bytes is longer than scope.max_url_length (%d)", raw, len(key), maxLen)
	}
	// Port 0 is a valid URL (urlkey gives its key) but no connection can
	// reach it: a seed there would only fail its retries.
	if u, err := url.Parse(key); err == nil && u.Port() == "0" {
		return fmt.Errorf("%.200q: port 0 cannot be connected to", raw)
	}
	return nil
}
