package synthweb

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ChangeConfig makes the content pages (/, /p/N, /private/N, /s/N) change
// over time. Its zero value switches changes off: pages never change and
// carry no validators, byte for byte as without it.
type ChangeConfig struct {
	// MinInterval and MaxInterval bound the mean time between two changes
	// of a page, drawn per page log-uniform between them (from Seed).
	// MaxInterval 0 switches changes off. MinInterval is at least 1s:
	// change times are whole seconds (see the package doc).
	MinInterval, MaxInterval time.Duration
	// NeverFraction of the content pages never change.
	NeverFraction float64
	// NoValidatorsFraction of the hosts ignore validators, as many real
	// servers do: they answer every request 200 and send neither ETag nor
	// Last-Modified.
	NoValidatorsFraction float64
	// SitemapLastmod lists each URL's <lastmod> (its version's time) in the
	// host's sitemap.
	SitemapLastmod bool
	// Epoch is when every page is at version 0 and its change process
	// starts. Zero means when Start was called. It is truncated to the second.
	Epoch time.Time
}

// DefaultChangeConfig returns a wide mix: mean change intervals from 5s to
// 3 days, a fifth of the pages never changing, a fifth of the hosts
// ignoring validators, lastmod in the sitemaps.
func DefaultChangeConfig() ChangeConfig {
	return ChangeConfig{
		MinInterval:          5 * time.Second,
		MaxInterval:          72 * time.Hour,
		NeverFraction:        0.2,
		NoValidatorsFraction: 0.2,
		SitemapLastmod:       true,
	}
}

// Enabled reports whether pages change.
func (c ChangeConfig) Enabled() bool { return c.MaxInterval > 0 }

// validate appends the field errors of c through bad.
func (c ChangeConfig) validate(bad func(field, format string, args ...any)) {
	if c.MaxInterval < 0 {
		bad("Changes.MaxInterval", "%v is negative", c.MaxInterval)
	}
	if !c.Enabled() {
		return
	}
	if c.MinInterval < time.Second {
		bad("Changes.MinInterval", "%v is below 1s", c.MinInterval)
	}
	if c.MaxInterval < c.MinInterval {
		bad("Changes.MaxInterval", "%v is below MinInterval %v", c.MaxInterval, c.MinInterval)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Changes.NeverFraction", c.NeverFraction}, {"Changes.NoValidatorsFraction", c.NoValidatorsFraction}} {
		if !(f.v >= 0 && f.v <= 1) {
			bad(f.name, "%v not in [0, 1]", f.v)
		}
	}
}

// changes reports whether p is a content page whose versions change: an
// existing HTML page, not a redirect and not the calendar trap.
func (g *graph) changes(p page) bool {
	if !g.cfg.Changes.Enabled() || p.ext {
		return false
	}
	switch p.kind {
	case kindPage, kindPrivate, kindOrphan:
		return g.exists(p) && !g.isRedirect(p)
	}
	return false
}

// validators reports whether host h honours validators.
func (g *graph) validators(h int32) bool {
	f := g.cfg.Changes.NoValidatorsFraction
	return f == 0 || frac(g.hash(saltValidators, uint64(h), 0, 0)) >= f
}

// meanInterval is p's mean time between changes in seconds, 0 for a page
// that never changes.
func (g *graph) meanInterval(p page) float64 {
	c := g.cfg.Changes
	if !g.changes(p) || frac(g.pageHash(saltNever, p, 0)) < c.NeverFraction {
		return 0
	}
	lo, hi := math.Log(c.MinInterval.Seconds()), math.Log(c.MaxInterval.Seconds())
	return math.Exp(lo + frac(g.pageHash(saltRate, p, 0))*(hi-lo))
}

// never is the change time of a page that changes no more.
const never = math.MaxInt64

// maxChangeSecond bounds change times, so that they fit in nanoseconds.
const maxChangeSecond = 9e9

// changeIter walks the change times of one page in order: the arrivals of
// a Poisson process with the page's rate, each rounded up to the next
// whole second since the epoch; arrivals that round to the same second
// make one change. Version v of a page is the one after its v-th change.
type changeIter struct {
	g    *graph
	p    page
	mean float64 // seconds; 0: never changes
	k    uint64  // arrivals drawn
	t    float64 // the k-th arrival, seconds since the epoch
	last int64   // the last change returned, whole seconds
}

func (g *graph) changeIter(p page) changeIter {
	return changeIter{g: g, p: p, mean: g.meanInterval(p)}
}

// next returns the next change time in whole seconds since the epoch, or
// never.
func (it *changeIter) next() int64 {
	if it.mean == 0 {
		return never
	}
	for {
		it.k++
		u := frac(it.g.pageHash(saltChange, it.p, it.k))
		it.t += -math.Log1p(-u) * it.mean
		if it.t > maxChangeSecond { // centuries away: fits int64 nanoseconds
			it.mean = 0
			return never
		}
		if c := int64(math.Ceil(it.t)); c > it.last {
			it.last = c
			return c
		}
	}
}

// versionCursor follows a page's version along increasing times.
type versionCursor struct {
	it      changeIter
	version uint32
	since   int64 // the version's change time, seconds since the epoch (0 for version 0)
	nextC   int64 // the next change, seconds since the epoch, or never
}

func (g *graph) versionCursor(p page) versionCursor {
	c := versionCursor{it: g.changeIter(p)}
	c.nextC = c.it.next()
	return c
}

// at moves the cursor to time ns (nanoseconds since the epoch, not before
// the previous call) and returns the version then.
func (c *versionCursor) at(ns int64) uint32 {
	for c.nextC != never && c.nextC*int64(time.Second) <= ns {
		c.version++
		c.since = c.nextC
		c.nextC = c.it.next()
	}
	return c.version
}

// staleAt is when the current version is replaced, in nanoseconds since
// the epoch, or never.
func (c *versionCursor) staleAt() int64 {
	if c.nextC == never {
		return never
	}
	return c.nextC * int64(time.Second)
}

// epochNanos converts t to nanoseconds since the epoch.
func (w *Web) epochNanos(t time.Time) int64 { return t.Sub(w.epoch).Nanoseconds() }

// Epoch returns the time every page is at version 0 and the change
// processes start (Config.Changes.Epoch, or Start's time, to the second).
func (w *Web) Epoch() time.Time { return w.epoch }

// Version returns the version of url at time at and when that version
// appeared. ok is false for a URL that is not a changing content page
// (changes off, a redirect, not a page).
func (w *Web) Version(url string, at time.Time) (version int, since time.Time, ok bool) {
	p, err := w.pageOf(url)
	if err != nil || !w.g.changes(p) {
		return 0, time.Time{}, false
	}
	c := w.g.versionCursor(p)
	v := c.at(w.epochNanos(at))
	return int(v), w.epoch.Add(time.Duration(c.since) * time.Second), true
}

// MeanChangeInterval returns url's mean time between changes, the
// inverse of its Poisson rate: 0 for a page that never changes; ok is
// false when url is not a changing content page.
func (w *Web) MeanChangeInterval(url string) (d time.Duration, ok bool) {
	p, err := w.pageOf(url)
	if err != nil || !w.g.changes(p) {
		return 0, false
	}
	return time.Duration(w.g.meanInterval(p) * float64(time.Second)), true
}

// etag is the strong entity tag of version v of p.
func (g *graph) etag(p page, v uint32) string {
	return fmt.Sprintf(`"v%d-%08x"`, v, uint32(g.pageHash(saltETag, p, 0)))
}

// evalConditional evaluates the preconditions of a GET or HEAD of a
// representation with entity tag etag and modification time lastMod, in
// the order of RFC 9110 section 13.2.2: If-Match, else If-Unmodified-Since
// (412 when false); If-None-Match, else If-Modified-Since (304 when
// false). It returns the status to answer: 200, 304 or 412. Unparsable
// dates are ignored, as the RFC requires.
func evalConditional(h http.Header, etag string, lastMod time.Time) int {
	if v := h.Values("If-Match"); len(v) > 0 {
		if !etagListMatch(strings.Join(v, ","), etag, false) {
			return http.StatusPreconditionFailed
		}
	} else if t, err := http.ParseTime(h.Get("If-Unmodified-Since")); err == nil && lastMod.After(t) {
		return http.StatusPreconditionFailed
	}
	if v := h.Values("If-None-Match"); len(v) > 0 {
		if etagListMatch(strings.Join(v, ","), etag, true) {
			return http.StatusNotModified
		}
	} else if t, err := http.ParseTime(h.Get("If-Modified-Since")); err == nil && !lastMod.After(t) {
		return http.StatusNotModified
	}
	return http.StatusOK
}

// etagListMatch reports whether the field value list ("*" or a comma
// separated list of entity tags, RFC 9110 8.8.3) matches etag, a strong
// tag of an existing representation. weak selects the weak comparison
// (If-None-Match), which ignores the W/ prefix; the strong one
// (If-Match) never matches a weak tag. A malformed list matches nothing
// from the first bad element on.
func etagListMatch(list, etag string, weak bool) bool {
	s := list
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return false
		}
		if s[0] == '*' {
			return true
		}
		isWeak := strings.HasPrefix(s, "W/")
		if isWeak {
			s = s[2:]
		}
		if len(s) < 2 || s[0] != '"' {
			return false
		}
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			return false
		}
		tag := s[:end+2]
		s = s[end+2:]
		if tag == etag && (weak || !isWeak) {
			return true
		}
		s = strings.TrimLeft(s, " \t")
		if s != "" && s[0] != ',' {
			return false
		}
	}
}

// appendLastmod appends a W3C datetime (RFC 3339, UTC, seconds).
func appendLastmod(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, time.RFC3339)
}

// appendVersion appends the version line of a changing page's body.
func appendVersion(b []byte, v uint32, since time.Time) []byte {
	b = append(b, "<p class=\"version\">Version "...)
	b = strconv.AppendUint(b, uint64(v), 10)
	b = append(b, ", updated "...)
	b = appendLastmod(b, since)
	return append(b, ".</p>\n"...)
}

// MeanChangeIntervals returns the mean change interval of every page
// Freshness counts, in host order, 0 for a page that never changes: the
// true rates, for a simulation that needs no server.
func MeanChangeIntervals(cfg Config) ([]time.Duration, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := newGraph(cfg.withDefaults())
	var out []time.Duration
	g.contentPages(func(p page) { out = append(out, time.Duration(g.meanInterval(p)*float64(time.Second))) })
	return out, nil
}
