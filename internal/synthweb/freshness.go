package synthweb

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// serve is one GET of a changing page answered 200 or 304.
type serve struct {
	at          int64 // nanoseconds since the epoch, when the request arrived (before any Latency)
	notModified bool
}

// serveLog records every serve of the changing pages. It is safe for
// concurrent use; its memory is bounded by Config.MaxRecorded serves.
type serveLog struct {
	max int
	mu  struct {
		sync.Mutex
		pages   map[page][]serve // in time order
		n       int              // serves recorded
		dropped int64            // serves past the cap
	}
}

func newServeLog(max int) *serveLog {
	l := &serveLog{max: max}
	l.mu.pages = make(map[page][]serve)
	return l
}

func (l *serveLog) record(p page, s serve) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.n >= l.max {
		l.mu.dropped++
		return
	}
	l.mu.n++
	ss := append(l.mu.pages[p], s)
	// Requests for one page may finish out of order; keep arrival order.
	for i := len(ss) - 1; i > 0 && ss[i].at < ss[i-1].at; i-- {
		ss[i], ss[i-1] = ss[i-1], ss[i]
	}
	l.mu.pages[p] = ss
}

func (l *serveLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.mu.pages)
	l.mu.n, l.mu.dropped = 0, 0
}

// FreshnessReport is the freshness of the crawler's copies over a window,
// as Cho and Garcia-Molina define it ("Effective page refresh policies
// for web crawlers", ACM TODS 28(4), 2003), computed exactly from the
// version history and the serve log.
//
// The crawler's copy of a page is the version it was last served (200)
// or last confirmed (304). A copy is fresh at t while it is the page's
// current version; its age at t is 0 while fresh, else t minus the time
// the copy went stale (the page's first change after the serve).
type FreshnessReport struct {
	From, To time.Time
	// Pages counts the changing content pages the freshness is over:
	// "/", /p/N (redirects aside), /s/N, and /private/N on hosts whose
	// robots.txt allows them. Fetched counts those with a copy by To.
	Pages, Fetched int
	// Freshness is the time average over the window of the share of
	// Pages whose copy is current. A page without a copy counts as not
	// fresh.
	Freshness float64
	// MeanAge is the time average over the window of the age of the
	// copies, over the pages that hold one (a page without a copy is
	// left out of it, not counted as age 0).
	MeanAge time.Duration
	// Changes counts the page changes in the window.
	Changes int
	// Fetches counts the GETs of the pages answered 200 or 304 in the
	// window; NotModified the 304s among them.
	Fetches, NotModified int
	// UnchangedRevisits counts the fetches, on hosts that honour
	// validators, of a page that had not changed since its previous serve;
	// UnchangedRevisits304 how many of them were answered 304 (the target
	// is all of them: a crawler that sends its validators gets 304).
	UnchangedRevisits, UnchangedRevisits304 int
	// UnchangedFull counts the 200s, on any host, that served the version
	// the previous serve had already given: a crawl's archive should hold
	// revisit records, not full responses, for them.
	// UnchangedFullNoValidators counts those on hosts that ignore
	// validators, where a 200 is the only answer.
	UnchangedFull, UnchangedFullNoValidators int
	// Truncated is set when serves were dropped past Config.MaxRecorded:
	// the report is then partial.
	Truncated bool
}

// NotModifiedShare is UnchangedRevisits304 / UnchangedRevisits, or 1 when
// there was no unchanged revisit.
func (r FreshnessReport) NotModifiedShare() float64 {
	if r.UnchangedRevisits == 0 {
		return 1
	}
	return float64(r.UnchangedRevisits304) / float64(r.UnchangedRevisits)
}

// String is a one-line summary, for a demo's output.
func (r FreshnessReport) String() string {
	s := fmt.Sprintf("freshness %.3f, mean age %v over %d pages (%d fetched), %d changes; %d fetches, %d 304; "+
		"unchanged revisits on validator hosts %d, %d of them 304 (%.1f%%); 200s of an unchanged page %d (%d on hosts without validators)",
		r.Freshness, r.MeanAge.Round(time.Millisecond), r.Pages, r.Fetched, r.Changes, r.Fetches, r.NotModified,
		r.UnchangedRevisits, r.UnchangedRevisits304, 100*r.NotModifiedShare(), r.UnchangedFull, r.UnchangedFullNoValidators)
	if r.Truncated {
		s += " (partial: serve log full)"
	}
	return s
}

// Freshness computes the FreshnessReport of window [from, to]. Serves
// before from count: they give the copies the window starts with. It
// needs Config.Changes on (else it reports zero Pages) and to after from.
// The cost is one walk of every page's changes from the epoch to To.
func (w *Web) Freshness(from, to time.Time) FreshnessReport {
	r := FreshnessReport{From: from, To: to}
	if !w.cfg.Changes.Enabled() || !to.After(from) {
		return r
	}
	w.serves.mu.Lock()
	defer w.serves.mu.Unlock()
	r.Truncated = w.serves.mu.dropped > 0
	f, t := w.epochNanos(from), w.epochNanos(to)
	var fresh, age, held float64 // page-nanoseconds, page-seconds*nanoseconds, page-nanoseconds
	w.g.contentPages(func(p page) {
		r.Pages++
		ps := pageFreshness(w.g, p, w.serves.mu.pages[p], f, t, &r)
		fresh += ps.fresh
		age += ps.age
		held += ps.held
		if ps.fetched {
			r.Fetched++
		}
	})
	if r.Pages > 0 {
		r.Freshness = fresh / (float64(r.Pages) * float64(t-f))
	}
	if held > 0 {
		r.MeanAge = time.Duration(age / held)
	}
	return r
}

// contentPages calls fn for every page Freshness is over.
func (g *graph) contentPages(fn func(page)) {
	for h := range int32(g.cfg.Hosts) {
		for n := range int64(g.cfg.PagesPerHost) {
			if p := (page{host: h, kind: kindPage, n: n}); g.changes(p) {
				fn(p)
			}
		}
		if !g.hostDisallows(int(h)) {
			for n := range int64(g.cfg.PrivatePages) {
				fn(page{host: h, kind: kindPrivate, n: n})
			}
		}
		for n := range int64(g.cfg.SitemapPages) {
			fn(page{host: h, kind: kindOrphan, n: n})
		}
	}
}

// pageStats is one page's integrals over a window.
type pageStats struct {
	fresh   float64 // nanoseconds fresh
	age     float64 // integral of the age, nanoseconds squared
	held    float64 // nanoseconds with a copy
	fetched bool    // a copy by the window's end
}

// pageFreshness integrates one page's freshness and age over [f, t]
// (nanoseconds since the epoch) and adds its serve counts to r.
func pageFreshness(g *graph, p page, serves []serve, f, t int64, r *FreshnessReport) pageStats {
	var st pageStats
	cur := g.versionCursor(p)
	validators := g.validators(p.host)
	have := false
	var version uint32
	var stale int64 // when the copy went (or goes) stale
	pos := f        // integrated up to here
	integrate := func(to int64) {
		if !have || to <= pos {
			return
		}
		st.held += float64(to - pos)
		if fe := min(stale, to); fe > pos {
			st.fresh += float64(fe - pos)
		}
		if a := max(stale, pos); a < to {
			// The age grows from 0 at stale: integral of (x - stale) over [a, to].
			x0, x1 := float64(a-stale), float64(to-stale)
			st.age += (x1*x1 - x0*x0) / 2
		}
	}
	for _, s := range serves {
		if s.at > t {
			break
		}
		integrate(max(s.at, f))
		v := cur.at(s.at)
		if s.at >= f {
			r.Fetches++
			if s.notModified {
				r.NotModified++
			}
			if have && v == version {
				if validators {
					r.UnchangedRevisits++
					if s.notModified {
						r.UnchangedRevisits304++
					}
				}
				if !s.notModified {
					r.UnchangedFull++
					if !validators {
						r.UnchangedFullNoValidators++
					}
				}
			}
		}
		have, version, stale = true, v, cur.staleAt()
		pos = max(s.at, f)
	}
	integrate(t)
	st.fetched = have
	// Count the changes in (f, t].
	cc := g.versionCursor(p)
	before := cc.at(f)
	r.Changes += int(cc.at(t) - before)
	return st
}

// recordServe logs a 200 or 304 to a GET of a changing page.
func (w *Web) recordServe(r *http.Request, p page, at int64, status int) {
	if r.Method != http.MethodGet || (status != http.StatusOK && status != http.StatusNotModified) {
		return
	}
	w.serves.record(p, serve{at: at, notModified: status == http.StatusNotModified})
}
