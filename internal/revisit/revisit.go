package revisit

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// Entry is what a URL's schedule keeps between visits, besides its
// validators and digest (which the frontier stores itself).
type Entry struct {
	Interval time.Duration // the current interval; next due = last visit + Interval
	// Visits counts recent visits and Changes those of them that saw a
	// change. The adaptive policy counts visits in units of the current
	// interval (rescaled when the interval changes) and halves both past
	// 2 x Window; the uniform one counts plain visits, capped at 65,536.
	Visits  uint32
	Changes uint32
}

// Visit is what one visit observed.
type Visit struct {
	// Changed: the page differs from the stored copy (a new payload
	// digest). NotModified: the server answered 304. Neither: the same
	// digest, or a visit that could not tell (an error).
	Changed, NotModified bool
	Elapsed              time.Duration // since the previous visit
}

// Window is about the number of recent visits the adaptive policy
// estimates a page's change rate from: past twice as many, Visits and
// Changes are halved, so the estimate follows a page whose rate drifts.
const Window = 32

// Policy computes intervals. It is safe for concurrent use.
type Policy struct {
	cfg       config.Revisit
	overrides []override
	uniform   bool

	// price is mu, the budget's price in seconds (float64 bits): the
	// Lagrange multiplier of the fetch budget (see the package doc).
	price atomic.Uint64
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
	p := &Policy{cfg: cfg, uniform: cfg.Policy == "uniform"}
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
	// Start where a page that changes once per Initial gets Initial.
	p.setPrice(freshnessGain(1) * max(cfg.Initial, time.Second).Seconds())
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
	if hint > 0 && !p.uniform {
		initial = hint
	}
	return Entry{Interval: clamp(initial, lo, hi)}
}

// Sitemaps is the interval of sitemaps and feeds.
func (p *Policy) Sitemaps() time.Duration { return p.cfg.Sitemaps }

// Next is e after visit v. The uniform policy keeps every URL at its
// initial interval. The adaptive policy estimates the page's change rate
// from its recent visits and picks the interval that maximizes the
// crawl's freshness at the current price of a fetch (see the package
// doc); the interval moves at most 4x shorter or 2x longer per visit.
func (p *Policy) Next(e Entry, v Visit, url, contentType string) Entry {
	initial, lo, hi := p.bounds(url, contentType)
	if e.Interval <= 0 {
		e.Interval = initial
	}
	e.Visits = min(e.Visits+1, 1<<16)
	if v.Changed {
		e.Changes = min(e.Changes+1, 1<<16)
	}
	if p.uniform {
		e.Interval = clamp(initial, lo, hi)
		return e
	}
	lambda := rateFor(e.Visits, e.Changes, e.Interval)
	next, ok := optimalInterval(lambda, p.Price())
	censored := e.Changes >= e.Visits
	switch {
	case censored && (!ok || e.Interval >= hi):
		// Every recent visit saw a change, so the rate is at least the
		// planning rate: when even that is too fast to be worth its
		// fetches at this price, or the page is at the longest interval
		// for that reason, it moves toward the longest interval (at most
		// 2x per visit, as every lengthening).
		next = hi
	case censored:
		// Find out how fast it is: at most half the interval.
		next = min(next, e.Interval/2)
	case !ok:
		next = hi
	}
	next = clamp(clamp(next, e.Interval/4, 2*e.Interval), lo, hi)
	e.Visits, e.Changes = rescale(e.Visits, e.Changes, e.Interval, next)
	e.Interval = next
	return e
}

// rescale carries the counts of visits made at interval from over to
// interval to: the visits count in units of the interval, so that
// Visits x Interval stays the time observed, and the estimate stays an
// estimate of the same rate. Counts where every visit saw a change stay
// as they are: the rate is only known to be high, and more such visits
// at a shorter interval make it higher. Past 2 x Window visits, both
// counts are halved, so the estimate follows a page whose rate drifts.
func rescale(n, x uint32, from, to time.Duration) (uint32, uint32) {
	if from != to && to > 0 && x < n {
		nf := math.Round(float64(n) * float64(from) / float64(to))
		n = uint32(min(max(nf, 1), 1<<16))
		x = min(x, n)
	}
	for n > 2*Window {
		x = uint32(uint64(x) * uint64(n/2) / uint64(n))
		n /= 2
	}
	return n, x
}

// censoredBound is the lower 10% confidence bound of r = lambda*I after n
// visits at interval I that all saw a change: (1-e^-r)^n = 0.1.
func censoredBound(n uint32) float64 {
	return -math.Log(-math.Expm1(math.Log(0.1) / float64(n)))
}

// EstimateRate is Cho and Garcia-Molina's estimator of a page's change
// rate (changes per second) from n visits at interval I of which x saw a
// change: -ln((n-x+0.5)/(n+0.5))/I. It is 0 before any visit.
func EstimateRate(n, x uint32, interval time.Duration) float64 {
	if n == 0 || interval <= 0 {
		return 0
	}
	x = min(x, n)
	return -math.Log((float64(n-x)+0.5)/(float64(n)+0.5)) / interval.Seconds()
}

// rateFor is the change rate the adaptive policy plans with: Cho and
// Garcia-Molina's estimate, except at the two ends where it says nothing
// useful. No change seen (x = 0, estimate 0): half a change is assumed,
// so a page that seems not to change still gets a finite interval that
// grows with the visits. A change at every visit (x = n, the estimate
// grows without bound with n): the lower 10% confidence bound of the rate,
// the rate at which n changes in n visits has a probability of 10%.
func rateFor(n, x uint32, interval time.Duration) float64 {
	if n == 0 || interval <= 0 {
		return 0
	}
	switch {
	case x == 0:
		return math.Log((float64(n)+0.5)/float64(n)) / interval.Seconds()
	case x >= n:
		return censoredBound(n) / interval.Seconds()
	}
	return EstimateRate(n, x, interval)
}

// freshnessGain is 1-(1+r)e^-r: lambda times the marginal freshness of
// one more visit per second to a page with change rate lambda visited at
// interval r/lambda.
func freshnessGain(r float64) float64 { return -math.Expm1(-r) - r*math.Exp(-r) }

// optimalInterval is the interval of Cho and Garcia-Molina's optimal
// policy for freshness for a page with change rate lambda at price mu:
// r = lambda*I solves 1-(1+r)e^-r = mu*lambda. ok is false when there is
// no solution: the page changes too often to be worth its fetches
// (mu*lambda >= 1), or never (lambda 0).
func optimalInterval(lambda, mu float64) (time.Duration, bool) {
	x := mu * lambda
	if lambda <= 0 || x >= 1 || math.IsNaN(x) {
		return 0, false
	}
	lo, hi := 0.0, 1.0
	for freshnessGain(hi) < x {
		hi *= 2
		if hi > 1e3 {
			return 0, false
		}
	}
	// Newton's method on g(r) = freshnessGain(r) - x, g'(r) = r·e^-r,
	// kept inside the bracket [lo, hi] (bisection where a step would leave
	// it): 3-6 steps for most rates (42 at worst, where the steps keep
	// leaving the bracket) where plain bisection took 64, each two exps
	// (14% of a revisit's frontier CPU time at 20M done URLs).
	r := min(max(math.Sqrt(2*x), lo), hi) // g(r) ~ r²/2 for small r
	for range 100 {
		g := freshnessGain(r) - x
		if g < 0 {
			lo = r
		} else {
			hi = r
		}
		next := r - g/(r*math.Exp(-r))
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-r) <= 1e-12*r || hi-lo <= 1e-15*hi {
			r = next
			break
		}
		r = next
	}
	s := r / lambda
	if s > float64(math.MaxInt64)/1e9 {
		return 0, false
	}
	return time.Duration(s * float64(time.Second)), true
}

// Price returns mu, the current price of a fetch, in seconds.
func (p *Policy) Price() float64 { return math.Float64frombits(p.price.Load()) }

func (p *Policy) setPrice(mu float64) {
	p.price.Store(math.Float64bits(min(max(mu, minPrice), maxPrice)))
}

// Bounds of the price: a thousandth of a second to a century.
const (
	minPrice = 1e-3
	maxPrice = 100 * 365 * 24 * 3600
)

// Tune adapts the price of a fetch to the crawl's capacity. The frontier
// calls it about once a minute with its revisit queue: due is the number
// of done URLs whose next visit has come, overdue those due for longer
// than the frontier's grace, scheduled all the done URLs with a schedule.
// The control rule is a slow integral one: overdue URLs mean the
// schedules ask for more fetches than the crawl makes, so the price rises
// by half a percent; none means there are slots to spare, so it drops by
// as much. A price change reaches the intervals only as the pages are
// visited again, one interval later, so the steps are small: at one call
// a minute the price moves at most 35% an hour. In the simulation of the
// package's tests, steps of 2% left 5% of the budget unused (the price
// oscillated) and gave 0.557 freshness, steps of 0.5% used it all and
// gave 0.566; 2x steps swung the price between 66 s and 19,000 s.
//
// The uniform policy ignores the price. Tune is safe for concurrent use
// with Next.
func (p *Policy) Tune(due, overdue, scheduled int64) {
	if p.uniform || scheduled <= 0 {
		return
	}
	if overdue > 0 {
		p.setPrice(p.Price() * tuneStep)
	} else {
		p.setPrice(p.Price() / tuneStep)
	}
}

// tuneStep is the factor of one Tune step.
const tuneStep = 1.005

func clamp(d, lo, hi time.Duration) time.Duration {
	if d < lo {
		d = lo
	}
	if hi > 0 && d > hi {
		d = hi
	}
	return d
}
