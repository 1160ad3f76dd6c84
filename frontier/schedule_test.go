package frontier

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/revisit"
)

// continuousConfig is noRobots in continuous mode with round revisit
// bounds: intervals of 1 h (initial), 10 min .. 100 h; due blocks of
// 150 s.
func continuousConfig(c *config.Config) {
	onceConfig(c)
	c.Crawl.Mode = "continuous"
	c.Revisit.Initial = time.Hour
	c.Revisit.Min = 10 * time.Minute
	c.Revisit.Max = 100 * time.Hour
	c.Revisit.Sitemaps = 15 * time.Minute
}

// onceConfig is noRobots with 16 leases per host at once and no delay
// between them.
func onceConfig(c *config.Config) {
	noRobots(c)
	c.Politeness.MinDelay = 0
	c.Frontier.MaxInflightPerHost = 16
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
// interval, and after a changed digest the interval is the policy's.
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
	// 304: the interval grows, as the policy says at the current price
	// (Lease tunes it once a minute).
	p := h.s.sched.policy
	e1 := revisit.Entry{Interval: time.Hour}
	e2 := p.Next(e1, revisit.Visit{NotModified: true, Elapsed: time.Hour}, u, "")
	if e2.Interval <= time.Hour {
		t.Fatalf("a 304 after 1 h gives an interval of %v, want longer", e2.Interval)
	}
	h.apply(nil, outcome(r, 304))
	// Not before its block: the interval less one block (150 s) and a second.
	h.clock.Advance(e2.Interval - 151*time.Second)
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("leased %+v %v after a 304 (interval %v)", ls, e2.Interval-151*time.Second, e2.Interval)
	}
	h.clock.Advance(151 * time.Second)
	r = h.revisitOf(u)
	if r.ETag != `"v1"` || r.Digest != 0xabc {
		t.Fatalf("a 304 lost the validators: %+v", r)
	}
	// A new digest: the interval the policy gives a page seen changed
	// once in two visits.
	e3 := p.Next(e2, revisit.Visit{Changed: true, Elapsed: e2.Interval}, u, "text/html")
	h.apply(nil, fetched(r, `"v2"`, 0xdef))
	h.clock.Advance(e3.Interval - 151*time.Second)
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("leased %+v before the interval %v after a change", ls, e3.Interval)
	}
	h.clock.Advance(151 * time.Second)
	r = h.revisitOf(u)
	if r.ETag != `"v2"` || r.Digest != 0xdef {
		t.Fatalf("revisit after a change: %+v", r)
	}
	st = h.s.Status()
	if st.Revisit.NotModified != 1 || st.Revisit.Changed != 1 || st.Revisit.Revisits != 3 {
		t.Fatalf("revisit counters %+v", st.Revisit)
	}
	checkSchedule(t, h.s)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// fetchAll leases and fetches (200) everything leasable now, and returns
// the URLs fetched.
func (h *harness) fetchAll(digest uint64) []string {
	h.t.Helper()
	var urls []string
	for {
		ls := h.leaseAll()
		if len(ls) == 0 {
			slices.Sort(urls)
			return urls
		}
		for _, l := range ls {
			h.apply(nil, fetched(l, `"e"`, digest))
			urls = append(urls, l.URL)
		}
	}
}

// scheduledHarness is a continuous crawl that fetched urls (200, ETag
// "e", digest).
func scheduledHarness(t *testing.T, digest uint64, urls ...string) *harness {
	t.Helper()
	h := newHarness(t, continuousConfig)
	h.seed(urls...)
	if got := h.fetchAll(digest); len(got) != len(urls) {
		t.Fatalf("fetched %v, want %v", got, urls)
	}
	return h
}

// leasedURLs is the sorted URLs of ls, wanting every one a revisit.
func leasedURLs(t *testing.T, ls []Lease) []string {
	t.Helper()
	var urls []string
	for _, l := range ls {
		if !l.Revisit {
			t.Fatalf("lease %+v is not a revisit", l)
		}
		urls = append(urls, l.URL)
	}
	slices.Sort(urls)
	return urls
}

// TestRevisitReopenAndCrash: the schedule (in the inbox and in compacted
// segments) survives Close and reopen; a revisit lease a crash forgot is
// leased again, one that was committed is not leased twice, and its
// expiry brings it back once; nothing is lost.
func TestRevisitReopenAndCrash(t *testing.T) {
	t.Parallel()
	h := newHarness(t, continuousConfig)
	var all []string
	for _, host := range []string{"a.example", "b.example"} {
		for i := range 3 {
			all = append(all, fmt.Sprintf("http://%s/p%d", host, i))
		}
	}
	slices.Sort(all)
	h.seed(all[:3]...)
	h.fetchAll(1)
	if _, err := h.s.Compact(); err != nil { // a.example's entries into segments
		t.Fatal(err)
	}
	h.seed(all[3:]...)
	h.fetchAll(1) // b.example's stay in the schedule inbox
	h.reopen()
	if st := h.s.Status(); st.Revisit.Scheduled != 6 || st.Done != 6 {
		t.Fatalf("after reopen: done %d, revisit %+v", st.Done, st.Revisit)
	}
	// Not before their interval, from the segments or the inbox.
	h.clock.Advance(55 * time.Minute)
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("leased %+v 55 min into a 1 h interval", ls)
	}
	h.clock.Advance(5 * time.Minute)
	if got := leasedURLs(t, h.leaseAll()); !slices.Equal(got, all) {
		t.Fatalf("revisits %v, want %v", got, all)
	}
	// A crash before the leases were committed forgets them: leased again.
	h.crash()
	if got := leasedURLs(t, h.leaseAll()); !slices.Equal(got, all) {
		t.Fatalf("revisits after a crash %v, want %v", got, all)
	}
	// Committed, they survive the crash and are not leased twice.
	if err := h.s.Flush(); err != nil {
		t.Fatal(err)
	}
	h.crash()
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("leased %+v twice in one due period", ls)
	}
	if st := h.s.Status(); st.Leased != 6 || st.Done != 0 || st.Revisit.Scheduled != 6 {
		t.Fatalf("after the crash: leased %d done %d revisit %+v", st.Leased, st.Done, st.Revisit)
	}
	checkSchedule(t, h.s)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	// Expired, they come back once, with their validators.
	h.clock.Advance(h.cfg.Frontier.LeaseTimeout + time.Second)
	if n, err := h.s.expireLeases(); err != nil || n != 6 {
		t.Fatalf("expired %d, %v; want 6", n, err)
	}
	ls := h.leaseAll()
	if got := leasedURLs(t, ls); !slices.Equal(got, all) {
		t.Fatalf("revisits after expiry %v, want %v", got, all)
	}
	for _, l := range ls {
		if l.ETag != `"e"` || l.Digest != 1 {
			t.Fatalf("revisit after expiry lost its validators: %+v", l)
		}
		h.apply(nil, outcome(l, 304))
	}
	h.reopen()
	if st := h.s.Status(); st.Done != 6 || st.Leased != 0 || st.Revisit.Scheduled != 6 || st.Revisit.NotModified != 6 {
		t.Fatalf("at the end: done %d leased %d revisit %+v", st.Done, st.Leased, st.Revisit)
	}
	checkSchedule(t, h.s)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestRevisitRelease: a released revisit goes back to the due list.
func TestRevisitRelease(t *testing.T) {
	t.Parallel()
	h := scheduledHarness(t, 7, "http://a.example/x")
	h.clock.Advance(time.Hour)
	r := h.revisitOf("http://a.example/x")
	h.apply(nil, &Outcome{LeaseID: r.ID, URL: r.URL, Released: true})
	r2 := h.revisitOf("http://a.example/x")
	if r2.Digest != 7 || r2.ID == r.ID {
		t.Fatalf("released revisit came back as %+v", r2)
	}
}

// TestRevisitOutcomes: a 404 is revisited at revisit.max without
// validators, a redirect not at all, and a failed revisit (500) is due
// again after its interval, without a retry in between.
func TestRevisitOutcomes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, continuousConfig)
	h.seed("http://a.example/gone", "http://b.example/moved", "http://c.example/flaky")
	for _, l := range h.leaseAll() {
		switch l.URL {
		case "http://a.example/gone":
			h.apply(nil, outcome(l, 404))
		case "http://b.example/moved":
			h.apply(nil, outcome(l, 301))
		default:
			h.apply(nil, fetched(l, `"f"`, 3))
		}
	}
	st := h.s.Status()
	if st.Revisit.Scheduled != 2 || st.Revisit.Intervals[histIndex(100*3600)] != 1 || st.Revisit.Intervals[histIndex(3600)] != 1 {
		t.Fatalf("schedule %+v, want the 404 at 100 h and the page at 1 h", st.Revisit)
	}
	h.clock.Advance(time.Hour)
	r := h.revisitOf("http://c.example/flaky")
	h.apply(nil, outcome(r, 500))
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("a failed revisit was retried at once: %+v", ls)
	}
	h.clock.Advance(time.Hour)
	r = h.revisitOf("http://c.example/flaky")
	if r.ETag != `"f"` {
		t.Fatalf("a failed revisit lost its validators: %+v", r)
	}
	h.clock.Advance(99 * time.Hour)
	ls := h.leaseAll()
	if len(ls) != 1 || ls[0].URL != "http://a.example/gone" || ls[0].ETag != "" {
		t.Fatalf("leases at 100 h %+v, want the 404 page without validators", ls)
	}
	checkSchedule(t, h.s)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestRevisitShare: a host with due revisits and new URLs gives
// revisit.share of its leases to revisits; with one kind left, that
// kind gets every lease.
func TestRevisitShare(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		continuousConfig(c)
		c.Frontier.MaxInflightPerHost = 100
		c.Revisit.Share = 0.25
	})
	var old, fresh []string
	for i := range 8 {
		old = append(old, fmt.Sprintf("http://a.example/old%d", i))
		fresh = append(fresh, fmt.Sprintf("http://a.example/new%02d", i))
	}
	for i := 8; i < 16; i++ {
		fresh = append(fresh, fmt.Sprintf("http://a.example/new%02d", i))
	}
	h.seed(old...)
	h.fetchAll(1)
	h.clock.Advance(time.Hour)
	h.apply([]*LinkBatch{links("http://a.example/old0", 0, fresh...)})
	// Both kinds wait: a quarter of the leases are revisits.
	if ls := h.lease(16); len(ls) != 16 || countRevisits(ls) != 4 {
		t.Fatalf("%d leases, %d revisits; want 16 with 4 (share 0.25)", len(ls), countRevisits(ls))
	}
	// 4 revisits and 4 new URLs left: once the new ones are out, the
	// revisits take every lease.
	if rest := h.leaseAll(); len(rest) != 8 || countRevisits(rest) != 4 {
		t.Fatalf("the rest: %d leases, %d revisits; want 8 with 4", len(rest), countRevisits(rest))
	}
}

// countRevisits is how many of ls are revisits.
func countRevisits(ls []Lease) int {
	n := 0
	for _, l := range ls {
		if l.Revisit {
			n++
		}
	}
	return n
}

// TestSitemapHints: a sitemap lastmod after a URL's last visit makes it
// due now (from the schedule inbox or a segment); one before does not;
// a changefreq seeds a new URL's first interval, and a feed is revisited
// every revisit.sitemaps.
func TestSitemapHints(t *testing.T) {
	t.Parallel()
	h := newHarness(t, continuousConfig)
	h.seed("http://a.example/1", "http://a.example/2", "http://b.example/3")
	h.fetchAll(1)
	if _, err := h.s.Compact(); err != nil {
		t.Fatal(err)
	}
	h.seed("http://a.example/4")
	h.fetchAll(1) // in the schedule inbox
	h.clock.Advance(10 * time.Minute)
	now := h.clock.Now()
	sitemap := &LinkBatch{Source: "http://a.example/sitemap.xml", Links: []Link{
		{URL: "http://a.example/1", Kind: 1, LastMod: now.Add(-time.Minute)},
		{URL: "http://a.example/2", Kind: 1, LastMod: now.Add(-time.Hour)}, // before its visit
		{URL: "http://a.example/4", Kind: 1, LastMod: now},
		{URL: "http://a.example/new", Kind: 1, ChangeFreq: 20 * time.Minute},
		{URL: "http://a.example/feed.rss", Kind: 1},
	}}
	robotsTxt := &LinkBatch{Source: "http://a.example/robots.txt", Links: []Link{{URL: "http://a.example/sitemap.txt", Kind: 1}}}
	h.apply([]*LinkBatch{sitemap, robotsTxt})
	var got []string
	for _, l := range h.leaseAll() {
		switch l.URL {
		case "http://a.example/new":
			h.apply(nil, fetched(l, "", 0))
		case "http://a.example/feed.rss":
			o := fetched(l, "", 0)
			o.ContentType = "application/rss+xml"
			h.apply(nil, o)
		case "http://a.example/sitemap.txt":
			o := fetched(l, "", 0)
			o.ContentType = "text/plain"
			h.apply(nil, o)
		default:
			got = append(got, l.URL)
			if !l.Revisit {
				t.Fatalf("lease %+v is not a revisit", l)
			}
			h.apply(nil, outcome(l, 304))
		}
	}
	slices.Sort(got)
	if want := []string{"http://a.example/1", "http://a.example/4"}; !slices.Equal(got, want) {
		t.Fatalf("due after the sitemap: %v, want %v", got, want)
	}
	// The feed and the robots.txt sitemap every revisit.sitemaps (15 min,
	// after a 304 too); the new URL after its changefreq (20 min).
	feeds := []string{"http://a.example/feed.rss", "http://a.example/sitemap.txt"}
	for _, step := range []struct {
		advance time.Duration
		want    []string
	}{{15 * time.Minute, feeds}, {5 * time.Minute, []string{"http://a.example/new"}}, {10 * time.Minute, feeds}} {
		h.clock.Advance(step.advance)
		ls := h.leaseAll()
		if got := leasedURLs(t, ls); !slices.Equal(got, step.want) {
			t.Fatalf("revisits %v at %v, want %v", got, h.clock.Now(), step.want)
		}
		for _, l := range ls {
			h.apply(nil, outcome(l, 304))
		}
	}
	checkSchedule(t, h.s)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestExplainSchedule: explain shows a done URL's schedule.
func TestExplainSchedule(t *testing.T) {
	t.Parallel()
	h := scheduledHarness(t, 0x1234, "http://a.example/x")
	e, err := h.s.Explain("http://a.example/x")
	if err != nil {
		t.Fatal(err)
	}
	x := e.Schedule
	if e.State != "done" || x == nil || x.Where != "scheduled" || x.Interval != time.Hour || x.ETag != `"e"` ||
		x.Digest != "0000000000001234" || !x.NextDue.Equal(h.clock.Now().Add(time.Hour)) || !x.LastVisit.Equal(h.clock.Now()) {
		t.Fatalf("explain: state %s schedule %+v", e.State, x)
	}
	h.clock.Advance(time.Hour)
	h.revisitOf("http://a.example/x")
	if e, err = h.s.Explain("http://a.example/x"); err != nil || e.State != "leased" || e.Schedule == nil || e.Schedule.Where != "leased" {
		t.Fatalf("explain of a leased revisit: %+v %v", e, err)
	}
}

// TestRevisitDoneRecord: a revisit answered 304 or 200 after a 2xx
// leaves the URL's done record as it was (no write into the done set),
// while the schedule moves on; a revisit answered 404 rewrites it, and so
// does the 200 after that 404. The done count stays one URL throughout.
func TestRevisitDoneRecord(t *testing.T) {
	t.Parallel()
	h := scheduledHarness(t, 0x1234, "http://a.example/x")
	first := h.clock.Now()
	done := func(wantStatus int, wantAt time.Time) {
		t.Helper()
		e, err := h.s.Explain("http://a.example/x")
		if err != nil {
			t.Fatal(err)
		}
		if e.State != "done" || e.DoneStatus != wantStatus || !e.DoneAt.Equal(wantAt.Truncate(time.Second)) || e.Schedule == nil || !e.Schedule.LastVisit.Equal(h.clock.Now()) {
			t.Fatalf("explain: state %s, done %d at %v, schedule %+v; want done %d at %v, last visit now (%v)", e.State, e.DoneStatus, e.DoneAt, e.Schedule, wantStatus, wantAt, h.clock.Now())
		}
		if st := h.s.Status(); st.Done != 1 {
			t.Fatalf("done count %d, want 1", st.Done)
		}
	}
	h.clock.Advance(time.Hour)
	h.apply(nil, outcome(h.revisitOf("http://a.example/x"), 304))
	done(200, first)
	h.clock.Advance(2 * time.Hour)
	h.apply(nil, fetched(h.revisitOf("http://a.example/x"), `"e2"`, 0x5678))
	done(200, first)
	h.clock.Advance(4 * time.Hour)
	h.apply(nil, outcome(h.revisitOf("http://a.example/x"), 404))
	done(404, h.clock.Now())
	// Back after the 404: the done record says so.
	h.clock.Advance(100 * time.Hour)
	h.apply(nil, fetched(h.revisitOf("http://a.example/x"), `"e3"`, 0x9abc))
	done(200, h.clock.Now())
	checkSchedule(t, h.s)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestOnceModeWritesNoSchedule: a one-pass crawl's file has no schedule
// buckets, no version 4 host records and no revisit leases.
func TestOnceModeWritesNoSchedule(t *testing.T) {
	t.Parallel()
	h := newHarness(t, onceConfig)
	h.seed("http://a.example/x", "http://a.example/y")
	h.fetchAll(1)
	if st := h.s.Status(); st.Revisit != nil || st.Done != 2 {
		t.Fatalf("status: done %d revisit %+v", st.Done, st.Revisit)
	}
	h.clock.Advance(1000 * time.Hour)
	if ls := h.leaseAll(); len(ls) != 0 {
		t.Fatalf("once mode leased %+v again", ls)
	}
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	h.s = nil
	db, err := bolt.Open(h.path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for _, b := range store.ScheduleBuckets {
			if tx.Bucket(b) != nil {
				t.Errorf("bucket %s in a once-mode file", b)
			}
		}
		return tx.Bucket(store.BucketHosts).ForEach(func(k, v []byte) error {
			if v[0] > 3 {
				t.Errorf("host %s written as version %d", k, v[0])
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestContinuousOpenWritesNothing: a continuous crawl that opens a file
// and writes nothing leaves it as it was (the schedule's buckets come
// with the first entry), then schedules into it.
func TestContinuousOpenWritesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, onceConfig)
	h.seed("http://a.example/x", "http://a.example/y")
	h.fetchAll(1)
	h.seed("http://a.example/z")
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	continuousConfig(&h.cfg)
	h.open()
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(h.path); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("open and close in continuous mode changed the file (%v)", err)
	}
	h.open()
	if got := h.fetchAll(1); !slices.Equal(got, []string{"http://a.example/z"}) {
		t.Fatalf("fetched %v", got)
	}
	h.reopen()
	h.clock.Advance(time.Hour)
	h.revisitOf("http://a.example/z")
	checkSchedule(t, h.s)
}

// TestScheduleRandomOps runs random leases, outcomes (200 changed or
// not, 304, 404, 301, 500, released), expiries, compactions, sitemap
// hints, reopens and crashes over a continuous crawl of a few hosts,
// checking after each step that the schedule's counts agree with its
// buckets and Verify passes, and at the end that every URL fetched is
// scheduled exactly once unless its last visit was a redirect.
func TestScheduleRandomOps(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		continuousConfig(c)
		c.Frontier.LeaseTimeout = 10 * time.Minute
	})
	rng := rand.New(rand.NewPCG(42, 7))
	var urls []string
	for i := range 40 {
		urls = append(urls, fmt.Sprintf("http://h%d.example/p%02d", i%4, i))
	}
	h.seed(urls...)
	redirected := map[string]bool{}
	var out []Lease
	for step := range 300 {
		switch op := rng.IntN(10); {
		case op < 3:
			out = append(out, h.lease(1+rng.IntN(8))...)
		case op < 6 && len(out) > 0:
			i := rng.IntN(len(out))
			l := out[i]
			out = append(out[:i], out[i+1:]...)
			var o *Outcome
			switch k := rng.IntN(7); k {
			case 0, 1:
				o = fetched(l, fmt.Sprintf(`"%d"`, step), uint64(1+rng.IntN(2)))
			case 2:
				o = outcome(l, 304)
			case 3:
				o = outcome(l, 404)
			case 4:
				o = outcome(l, 301)
			case 5:
				o = outcome(l, 500)
			default:
				o = &Outcome{LeaseID: l.ID, URL: l.URL, Released: true}
			}
			res := h.apply(nil, o)
			if res.Outcomes == 1 && o.Status == 301 {
				redirected[l.URL] = true
			} else if res.Outcomes == 1 && (o.Status == 200 || o.Status == 304 || o.Status == 404) {
				delete(redirected, l.URL)
			}
		case op == 6:
			h.clock.Advance(time.Duration(rng.IntN(40)) * time.Minute)
			if _, err := h.s.expireLeases(); err != nil {
				t.Fatal(err)
			}
		case op == 7:
			if _, err := h.s.Compact(); err != nil {
				t.Fatal(err)
			}
		case op == 8:
			u := urls[rng.IntN(len(urls))]
			h.apply([]*LinkBatch{{Source: "http://h0.example/sitemap.xml", Links: []Link{{URL: u, Kind: 1, LastMod: h.clock.Now()}}}})
		default:
			if err := h.s.Flush(); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				h.crash()
			} else {
				h.reopen()
			}
			out = nil // the leases out come back by expiry
		}
		checkSchedule(t, h.s)
		if err := h.s.Verify(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
	}
	// Settle: everything leased comes back, everything queued is fetched.
	h.clock.Advance(time.Hour)
	if _, err := h.s.expireLeases(); err != nil {
		t.Fatal(err)
	}
	for {
		ls := h.leaseAll()
		if len(ls) == 0 {
			break
		}
		for _, l := range ls {
			if l.Revisit {
				h.apply(nil, outcome(l, 304))
			} else {
				h.apply(nil, fetched(l, "", 1))
			}
			delete(redirected, l.URL)
		}
	}
	checkSchedule(t, h.s)
	st := h.s.Status()
	t.Logf("settled: %+v, done %d", st.Revisit, st.Done)
	if want := int64(len(urls) - len(redirected)); st.Queued != 0 || st.Leased != 0 || st.Revisit.Scheduled != want {
		t.Fatalf("settled: queued %d leased %d scheduled %d, want 0, 0, %d", st.Queued, st.Leased, st.Revisit.Scheduled, want)
	}
}

// TestVerifyScheduleFindsFaults: the schedule's check can fail: a host
// count or the histogram off by one is ErrCorrupt.
func TestVerifyScheduleFindsFaults(t *testing.T) {
	t.Parallel()
	h := scheduledHarness(t, 1, "http://a.example/x", "http://a.example/y")
	check := func() error {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return h.s.viewLocked(h.s.verifyScheduleTx)
	}
	if err := check(); err != nil {
		t.Fatal(err)
	}
	host := h.s.hosts["a.example"]
	for _, fault := range []*uint64{nil, &h.s.count[cSchedHist+histIndex(3600)]} {
		if fault == nil {
			host.rec.Scheduled++
		} else {
			*fault++
		}
		if err := check(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("fault %v: check says %v", fault, err)
		}
		if fault == nil {
			host.rec.Scheduled--
		} else {
			*fault--
		}
	}
	if err := check(); err != nil {
		t.Fatal(err)
	}
}

// checkSchedule fails t when verifyScheduleTx finds a fault, or the
// ready hosts with queued URLs are not readyNew (the head cache's count).
func checkSchedule(t *testing.T, s *State) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.viewLocked(s.verifyScheduleTx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range s.ready {
		if h.rec.Queued > 0 {
			n++
		}
	}
	if n != s.readyNew {
		t.Fatalf("%d ready hosts have queued URLs, readyNew counts %d", n, s.readyNew)
	}
}
