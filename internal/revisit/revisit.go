// Package revisit decides when a continuous crawl visits a URL again:
// a URL's interval after each visit, from what the visits observed
// (changed or not), within configured bounds.
//
// The frontier keeps an Entry per done URL and calls Policy.Next after
// each visit; the result's Interval is added to the visit's time to give
// the URL's next due time.
package revisit

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// Entry is what a URL's schedule keeps between visits, besides its
// validators and digest (which the frontier stores itself).
type Entry struct {
	Interval time.Duration // the current interval; next due = last visit + Interval
	Visits   uint32        // visits that could tell change from no change (capped)
	Changes  uint32        // of those, the ones that saw a change (capped)
}

// Visit is what one visit observed.
type Visit struct {
	// Changed: the page differs from the stored copy (a new payload
	// digest). NotModified: the server answered 304. Neither: the same
	// digest, or a visit that could not tell (an error).
	Changed, NotModified bool
	Elapsed              time.Duration // since the previous visit
}

// Policy computes intervals. It is safe for concurrent use.
type Policy struct {
	cfg       config.Revisit
	overrides []override
}

type override struct {
	re                *regexp.Regexp
	contentType       string
	initial, min, max time.Duration
}

// New returns the policy cfg describes; it refuses an unknown policy or
// an override whose pattern does not compile.
func New(cfg config.Revisit) (*Policy, error) {
	switch cfg.Policy {
	case "", "adaptive", "uniform":
	default:
		return nil, fmt.Errorf("revisit: unknown policy %q (adaptive or uniform)", cfg.Policy)
	}
	p := &Policy{cfg: cfg}
	for i, o := range cfg.Overrides {
		ov := override{contentType: o.ContentType, initial: o.Initial, min: o.Min, max: o.Max}
		if o.Pattern != "" {
			re, err := regexp.Compile(o.Pattern)
			if err != nil {
				return nil, fmt.Errorf("revisit: overrides[%d]: %w", i, err)
			}
			ov.re = re
		}
		p.overrides = append(p.overrides, ov)
	}
	return p, nil
}

// bounds returns the initial interval and the bounds for a URL.
func (p *Policy) bounds(url, contentType string) (initial, lo, hi time.Duration) {
	initial, lo, hi = p.cfg.Initial, p.cfg.Min, p.cfg.Max
	for _, o := range p.overrides {
		if (o.re != nil && o.re.MatchString(url)) || (o.contentType != "" && strings.HasPrefix(contentType, o.contentType)) {
			if o.initial > 0 {
				initial = o.initial
			}
			if o.min > 0 {
				lo = o.min
			}
			if o.max > 0 {
				hi = o.max
			}
			break
		}
	}
	return initial, lo, max(hi, lo)
}

// First is the entry of a URL after its first visit; hint is a sitemap's
// changefreq (0: none), which seeds the interval when given.
func (p *Policy) First(url, contentType string, hint time.Duration) Entry {
	initial, lo, hi := p.bounds(url, contentType)
	if hint > 0 && p.cfg.Policy != "uniform" {
		initial = hint
	}
	return Entry{Interval: clamp(initial, lo, hi)}
}

// Sitemaps is the interval of sitemaps and feeds.
func (p *Policy) Sitemaps() time.Duration { return p.cfg.Sitemaps }

// Next is e after visit v. Baseline adaptive rule (as Nutch's
// AdaptiveFetchSchedule): a change shortens the interval by a fifth, no
// change lengthens it by two fifths, within the bounds.
func (p *Policy) Next(e Entry, v Visit, url, contentType string) Entry {
	initial, lo, hi := p.bounds(url, contentType)
	if e.Interval <= 0 {
		e.Interval = initial
	}
	e.Visits = min(e.Visits+1, 1<<16)
	if v.Changed {
		e.Changes = min(e.Changes+1, 1<<16)
	}
	if p.cfg.Policy == "uniform" {
		e.Interval = clamp(initial, lo, hi)
		return e
	}
	if v.Changed {
		e.Interval = e.Interval * 4 / 5
	} else {
		e.Interval = e.Interval * 7 / 5
	}
	e.Interval = clamp(e.Interval, lo, hi)
	return e
}

func clamp(d, lo, hi time.Duration) time.Duration {
	if d < lo {
		d = lo
	}
	if hi > 0 && d > hi {
		d = hi
	}
	return d
}
