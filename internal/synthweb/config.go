package synthweb

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Domain is the parent domain of every served host: h0.sim.test, h1.sim.test...
const Domain = "sim.test"

// ExternalDomain is the parent domain of the out-of-scope hosts pages link
// to (x0.elsewhere.test, ...). They are never served or resolved.
const ExternalDomain = "elsewhere.test"

// GeneratorVersion names the generator that turns a Config into bytes. It
// changes whenever the same Config would serve different bytes (the golden
// test, testdata/golden.txt, catches that), so a benchmark can record which
// site it crawled.
const GeneratorVersion = 1

// DefaultMaxRecorded is the request-log cap used when Config.MaxRecorded is 0.
const DefaultMaxRecorded = 1 << 21

// Config describes a synthetic web. The same Config (Seed included) always
// gives the same site, byte for byte. Fractions are in [0, 1]. A zero field
// switches its feature off unless its comment says otherwise; DefaultConfig
// gives a small, fully featured site.
type Config struct {
	// Hosts is the number of virtual hosts, h0.sim.test ... h{Hosts-1}.sim.test.
	Hosts int
	// PagesPerHost counts the pages of the public link graph of each host:
	// "/" (page 0) and /p/1 ... /p/{PagesPerHost-1}. At least 1.
	PagesPerHost int
	// PrivatePages is the number of pages /private/0 ... per host. The home
	// page links to /private/0, each private page to the next. On hosts
	// chosen by RobotsFraction robots.txt disallows /private/.
	PrivatePages int
	// SitemapPages is the number of pages /s/0 ... per host that no page
	// links to: only the host's sitemap lists them. With it set, every
	// robots.txt says "Sitemap: http://<host>/sitemap.xml", a sitemap
	// index naming /sitemap-1.xml, a urlset of the /s/ pages and the home
	// page. At most 40,000 (a urlset holds 50,000 URLs).
	SitemapPages int
	// OutDegree is the number of random link slots per page, on top of the
	// fixed navigation links (home, next page).
	OutDegree int
	// CrossHostFraction of the random slots link to a page of another host.
	CrossHostFraction float64
	// ExternalFraction of the random slots link to an out-of-scope host
	// x{k}.elsewhere.test, k < ExternalHosts (default 10 when 0).
	ExternalFraction float64
	ExternalHosts    int
	// PrivateLinkFraction of the random slots link to a /private/ page.
	PrivateLinkFraction float64
	// DuplicateLinkFraction of the random slots repeat a target already
	// linked from the page, often with another spelling that canonicalizes
	// to the same URL (fragment, dot segments, uppercase host, :80,
	// percent-encoded digits, relative forms).
	DuplicateLinkFraction float64
	// BrokenLinkFraction of pages carry one link to /gone/N, which answers 404.
	BrokenLinkFraction float64
	// Latency delays every response; LatencyJitter adds a deterministic
	// per-request extra in [0, LatencyJitter).
	Latency       time.Duration
	LatencyJitter time.Duration
	// ErrorRate is the fraction of content pages that answer 500 or 503 to
	// their first ErrorAttempts requests (default 1 when 0), then 200.
	// robots.txt, redirects, static files and calendar pages never fail.
	ErrorRate     float64
	ErrorAttempts int
	// RobotsFraction of the hosts (spread evenly, rotated by Seed) have a
	// robots.txt that disallows /private/ for every user agent.
	RobotsFraction float64
	// CrawlDelay, when positive, is announced as Crawl-delay (seconds, with
	// up to 3 decimals) in every host's robots.txt.
	CrawlDelay time.Duration
	// RedirectFraction of the pages /p/N answer 301 to /p/N+1 (to "/" for
	// the last page), so every page stays reachable through the chain.
	RedirectFraction float64
	// Trap adds a calendar trap to every host: the home page links to
	// /cal/2026/12 and each month links to the next, forever.
	Trap bool
	// Changes makes the content pages change over time, with validators
	// and 304s (see ChangeConfig); the zero value keeps every page as it is.
	Changes ChangeConfig
	// Seed selects the site; the same Seed gives the same bytes.
	Seed int64
	// MaxRecorded caps the request log (DefaultMaxRecorded when 0); past it
	// requests are still served and counted but not recorded, and Report
	// says the log was truncated.
	MaxRecorded int
	// Logger receives server errors (nil = discard).
	Logger *slog.Logger
}

// DefaultConfig returns a small web with every feature on except latency
// and the trap: 10 hosts x 100 pages.
func DefaultConfig() Config {
	return Config{
		Hosts:                 10,
		PagesPerHost:          100,
		PrivatePages:          5,
		OutDegree:             8,
		CrossHostFraction:     0.2,
		ExternalFraction:      0.05,
		ExternalHosts:         10,
		PrivateLinkFraction:   0.05,
		DuplicateLinkFraction: 0.15,
		BrokenLinkFraction:    0.02,
		ErrorRate:             0.02,
		ErrorAttempts:         1,
		RobotsFraction:        0.3,
		RedirectFraction:      0.05,
		Seed:                  1,
	}
}

// Validate reports every bad field at once, each by name.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...)))
	}
	if c.Hosts < 1 || c.Hosts > 1_000_000 {
		bad("Hosts", "%d not in [1, 1000000]", c.Hosts)
	}
	if c.PagesPerHost < 1 || c.PagesPerHost > 100_000_000 {
		bad("PagesPerHost", "%d not in [1, 100000000]", c.PagesPerHost)
	}
	if c.PrivatePages < 0 || c.PrivatePages > 1_000_000 {
		bad("PrivatePages", "%d not in [0, 1000000]", c.PrivatePages)
	}
	if c.SitemapPages < 0 || c.SitemapPages > 40_000 {
		bad("SitemapPages", "%d not in [0, 40000]", c.SitemapPages)
	}
	if c.OutDegree < 0 || c.OutDegree > 1000 {
		bad("OutDegree", "%d not in [0, 1000]", c.OutDegree)
	}
	if c.ExternalHosts < 0 {
		bad("ExternalHosts", "%d is negative", c.ExternalHosts)
	}
	if c.ErrorAttempts < 0 || c.ErrorAttempts > 100 {
		bad("ErrorAttempts", "%d not in [0, 100]", c.ErrorAttempts)
	}
	if c.Latency < 0 {
		bad("Latency", "%v is negative", c.Latency)
	}
	if c.LatencyJitter < 0 {
		bad("LatencyJitter", "%v is negative", c.LatencyJitter)
	}
	if c.CrawlDelay < 0 {
		bad("CrawlDelay", "%v is negative", c.CrawlDelay)
	}
	if c.MaxRecorded < 0 {
		bad("MaxRecorded", "%d is negative", c.MaxRecorded)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"CrossHostFraction", c.CrossHostFraction},
		{"ExternalFraction", c.ExternalFraction},
		{"PrivateLinkFraction", c.PrivateLinkFraction},
		{"DuplicateLinkFraction", c.DuplicateLinkFraction},
		{"BrokenLinkFraction", c.BrokenLinkFraction},
		{"ErrorRate", c.ErrorRate},
		{"RobotsFraction", c.RobotsFraction},
		{"RedirectFraction", c.RedirectFraction},
	} {
		if !(f.v >= 0 && f.v <= 1) { // also catches NaN
			bad(f.name, "%v not in [0, 1]", f.v)
		}
	}
	c.Changes.validate(bad)
	if s := c.CrossHostFraction + c.ExternalFraction + c.PrivateLinkFraction + c.DuplicateLinkFraction; s > 1 {
		bad("CrossHostFraction+ExternalFraction+PrivateLinkFraction+DuplicateLinkFraction", "sum %v exceeds 1", s)
	}
	return errors.Join(errs...)
}

// withDefaults fills the fields whose zero value means "default".
func (c Config) withDefaults() Config {
	if c.ExternalHosts == 0 {
		c.ExternalHosts = 10
	}
	if c.ErrorAttempts == 0 {
		c.ErrorAttempts = 1
	}
	if c.MaxRecorded == 0 {
		c.MaxRecorded = DefaultMaxRecorded
	}
	return c
}
