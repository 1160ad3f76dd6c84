package frontier

import (
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// continuousConfig is noRobots in continuous mode with round revisit
// bounds: intervals of 1 h (initial), 10 min .. 100 h; due blocks of
// 150 s.
func continuousConfig(c *config.Config) {
	noRobots(c)
	c.Crawl.Mode = "continuous"
	c.Revisit.Initial = time.Hour
	c.Revisit.Min = 10 * time.Minute
	c.Revisit.Max = 100 * time.Hour
	c.Revisit.Sitemaps = 15 * time.Minute
	c.Politeness.MinDelay = 0
}

// fetched is a 200 outcome of l with validators and a digest.
func fetched(l Lease, etag string, digest uint64) *Outcome {
	o := outcome(l, 200)
	o.ContentType = "text/html"
	o.ETag = etag
	o.LastModified = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	o.Digest = digest
	o.ArchivedAt = time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC)
	return o
}

// leaseAll leases everything leasable now.
func (h *harness) leaseAll() []Lease {
	h.t.Helper()
	var out []Lease
	for {
		ls := h.lease(100)
		if len(ls) == 0 {
			return out
		}
		out = append(out, ls...)
	}
}

// revisitOf wants exactly one lease, a revisit of url.
func (h *harness) revisitOf(url string) Lease {
	h.t.Helper()
	ls := h.leaseAll()
	if len(ls) != 1 || ls[0].URL != url || !ls[0].Revisit {
		h.t.Fatalf("leases %+v, want one revisit of %s", ls, url)
	}
	return ls[0]
}

// TestRevisitAfterInterval: a fetched URL is leased again, as a revisit
// carrying its validators, digest and archived-at, once its interval has
// passed (up to one due block early) and not before; a 304 lengthens the
// interval, a changed digest shortens it.
func TestRevisitAfterInterval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, continuousConfig)
	const u = "http://a.example/page"
	h.seed(u)
	l := h.leaseOne()
	if l.Revisit {
		t.Fatalf("first lease is a revisit: %+v", l)
	}
	first := fetched(l, `"v1"`, 0xabc)
	h.apply(nil, first)
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("leased %+v right after the visit", ls)
	}
	st := h.s.Status()
	if st.Revisit == nil || st.Revisit.Scheduled != 1 || st.Done != 1 {
		t.Fatalf("status after the visit: done %d, revisit %+v", st.Done, st.Revisit)
	}
	// Not yet due: 1 h minus more than one block (150 s).
	h.clock.Advance(time.Hour - 5*time.Minute)
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("leased %+v before the interval", ls)
	}
	if next, ok := h.s.NextReady(); !ok || next.After(h.clock.Now().Add(5*time.Minute)) {
		t.Fatalf("NextReady = %v %v, want within 5 min of %v", next, ok, h.clock.Now())
	}
	h.clock.Advance(5 * time.Minute)
	r := h.revisitOf(u)
	if r.ETag != `"v1"` || r.Digest != 0xabc || !r.LastModified.Equal(first.LastModified) || !r.ArchivedAt.Equal(first.ArchivedAt) {
		t.Fatalf("revisit lease %+v lacks the stored validators of %+v", r, first)
	}
	if st := h.s.Status(); st.Leased != 1 || st.Done != 0 || st.Revisit.Revisits != 1 {
		t.Fatalf("status during the revisit: leased %d done %d revisit %+v", st.Leased, st.Done, st.Revisit)
	}
	// 304: the interval grows (1 h * 7/5 = 84 min).
	nm := outcome(r, 304)
	h.apply(nil, nm)
	h.clock.Advance(80 * time.Minute)
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("leased %+v 80 min after a 304 (interval 84 min)", ls)
	}
	h.clock.Advance(4 * time.Minute)
	r = h.revisitOf(u)
	if r.ETag != `"v1"` || r.Digest != 0xabc {
		t.Fatalf("a 304 lost the validators: %+v", r)
	}
	// A new digest: the interval shrinks (84 min * 4/5 = 67.2 min).
	h.apply(nil, fetched(r, `"v2"`, 0xdef))
	h.clock.Advance(68 * time.Minute)
	r = h.revisitOf(u)
	if r.ETag != `"v2"` || r.Digest != 0xdef {
		t.Fatalf("revisit after a change: %+v", r)
	}
	st = h.s.Status()
	if st.Revisit.NotModified != 1 || st.Revisit.Changed != 1 || st.Revisit.Revisits != 3 {
		t.Fatalf("revisit counters %+v", st.Revisit)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
}
