package frontier

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

func TestLeaseExpiryRequeues(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	h.seed("http://example.com/1", "http://example.com/2")
	l := h.leaseOne()
	if l.URL != "http://example.com/1" || !l.Deadline.Equal(h.clock.Now().Add(2*time.Minute)) {
		t.Fatalf("lease %+v", l)
	}
	if d := h.s.NextDeadline(); !d.Equal(l.Deadline) {
		t.Fatalf("NextDeadline %v, want %v", d, l.Deadline)
	}
	h.clock.Advance(2*time.Minute - time.Nanosecond)
	if n, _ := h.s.expireLeases(); n != 0 {
		t.Fatalf("expired %d before the deadline", n)
	}
	h.clock.Advance(time.Nanosecond)
	if n, _ := h.s.expireLeases(); n != 1 {
		t.Fatalf("expired %d at the deadline, want 1", n)
	}
	// The URL is back at the head of its queue; the old lease's outcome is stale.
	l2 := h.leaseOne()
	if l2.URL != l.URL || l2.ID == l.ID {
		t.Fatalf("lease after expiry %+v, want %s under a new ID", l2, l.URL)
	}
	res := h.apply(nil, outcome(l, 200))
	if res.Stale != 1 || res.Outcomes != 0 {
		t.Fatalf("outcome of the expired lease: %+v", res)
	}
	// An outcome past its deadline, before ExpireLeasesBefore ran, counts: the
	// fetch is done, and the lease is no longer out to expire.
	h.clock.Advance(3 * time.Minute)
	if res := h.apply(nil, outcome(l2, 200)); res.Outcomes != 1 || res.Stale != 0 {
		t.Fatalf("late outcome: %+v", res)
	}
	if n, _ := h.s.expireLeases(); n != 0 {
		t.Fatalf("%d leases expired after the late outcome", n)
	}
	// ExpireLeasesBefore expires only what its cutoff has passed.
	h.clock.Advance(time.Minute) // the host's politeness delay after that response
	l3 := h.leaseOne()
	if n, _ := h.s.ExpireLeasesBefore(l3.Deadline.Add(-time.Nanosecond)); n != 0 {
		t.Fatalf("expired %d leases before the cutoff reached their deadline", n)
	}
	// Unknown IDs and other shards are ignored.
	res = h.apply(nil, &Outcome{LeaseID: 999999, Status: 200}, &Outcome{LeaseID: l3.ID, Shard: 5, Status: 200})
	if res.Stale != 2 {
		t.Fatalf("unknown/other-shard outcomes: %+v", res)
	}
	st := h.s.Status()
	if st.Outcomes["stale"] != 3 || st.Leased != 1 || st.Queued != 0 || st.Done != 1 {
		t.Fatalf("status %+v", st)
	}
}

func TestRetriesUpToMax(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Politeness.MaxRetries = 2
		c.Politeness.ErrorStreak = 0
	})
	h.seed("http://example.com/flaky")
	for i := 0; i < 3; i++ {
		l := h.leaseOne()
		if l.URL != "http://example.com/flaky" {
			t.Fatalf("attempt %d: %+v", i, l)
		}
		h.apply(nil, outcome(l, 502))
		h.clock.Advance(time.Minute)
		e, _ := h.s.Explain(l.URL)
		want := "queued"
		if i == 2 {
			want = "done"
		}
		if e.State != want {
			t.Fatalf("after failure %d: state %s, want %s", i+1, e.State, want)
		}
		if i == 2 && (e.DoneReason != "failed" || e.DoneStatus != 502) {
			t.Fatalf("done as %s %d, want failed 502", e.DoneReason, e.DoneStatus)
		}
		if i < 2 && e.Attempts != uint32(i+1) {
			t.Fatalf("attempts %d, want %d", e.Attempts, i+1)
		}
	}
	if ls := h.lease(10); len(ls) != 0 {
		t.Fatalf("leased %+v after giving up", ls)
	}
	c := h.s.counters()
	if c["retries"] != 2 || c["failed"] != 1 || c["done"] != 1 || c["outcome_5xx"] != 3 {
		t.Fatalf("counters %v", c)
	}
}

// TestPermanentFailureIsNotRetried: an outcome without a response that
// the crawler calls permanent (its guard refused the address) finishes
// the URL as failed at once, with no retry; a transient one is retried.
// The dropped-link counts an outcome carries are received and rejected.
func TestPermanentFailureIsNotRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Politeness.ErrorStreak = 0
	})
	h.seed("http://example.com/blocked", "http://example.com/flaky")
	for range 2 {
		l := h.leaseOne()
		o := outcome(l, 0)
		o.Permanent = l.URL == "http://example.com/blocked"
		o.LinksTooLong, o.LinksOverCap, o.LinksInvalid = 2, 3, 4 // a failed fetch has no links: the frontier counts what it is told
		h.apply(nil, o)
	}
	blocked, _ := h.s.Explain("http://example.com/blocked")
	flaky, _ := h.s.Explain("http://example.com/flaky")
	if blocked.State != "done" || blocked.DoneReason != "failed" || flaky.State != "queued" || flaky.Attempts != 1 {
		t.Fatalf("blocked: %s %s; flaky: %s after %d attempts; want done failed, queued after 1", blocked.State, blocked.DoneReason, flaky.State, flaky.Attempts)
	}
	c := h.s.counters()
	st := h.s.Status()
	if c["failed"] != 1 || c["retries"] != 1 || st.Rejected["url_too_long"] != 4 || st.Rejected["links_per_page"] != 6 || st.Rejected["invalid_url"] != 8 || st.LinksReceived != 2+18 {
		t.Fatalf("counters %v, rejected %v, received %d", c, st.Rejected, st.LinksReceived)
	}
}

func TestExplainStates(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	h.seed("http://example.com/a", "http://example.com/b")
	l := h.leaseOne()
	for _, tc := range []struct{ url, state string }{
		{"http://example.com/a", "leased"},
		{"HTTP://EXAMPLE.COM/b#x", "queued"},
		{"http://example.com/c", "unknown"},
	} {
		e, err := h.s.Explain(tc.url)
		if err != nil || e.State != tc.state || !e.Owned || e.Shard != 0 {
			t.Errorf("explain %s: %+v %v, want %s", tc.url, e, err, tc.state)
		}
	}
	h.apply(nil, outcome(l, 404))
	e, _ := h.s.Explain("http://example.com/a")
	if e.State != "done" || e.DoneStatus != 404 || e.DoneReason != "fetched" || !e.FilterSeen {
		t.Errorf("explain done: %+v", e)
	}
	if _, err := h.s.Explain("ftp://x/"); err == nil {
		t.Errorf("explain of an ftp URL: no error")
	}
}

// crashCopy opens a copy of the state's file as it is on disk now: what a
// kill -9 at this moment would leave.
func crashCopy(t *testing.T, h *harness) *State {
	t.Helper()
	data, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	crash := filepath.Join(t.TempDir(), "crash.db")
	if err := os.WriteFile(crash, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Config: h.cfg, Path: crash, Now: h.clock.Now})
	if err != nil {
		t.Fatalf("open the crash copy: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestLeasesCommitLazily: a lease is in the file after the next commit
// (Flush or Apply), not when Lease returns; a crash before that forgets the
// lease and its dequeue together, so the URL is offered again under a new
// ID, and the crawler's outcome for the forgotten lease is stale.
func TestLeasesCommitLazily(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	h.seed("http://example.com/1", "http://example.com/2")
	l := h.leaseOne()

	s2 := crashCopy(t, h)
	if err := s2.Verify(); err != nil {
		t.Fatal(err)
	}
	if st := s2.Status(); st.Queued != 2 || st.Leased != 0 {
		t.Fatalf("crash before the commit: queued %d leased %d, want 2 0", st.Queued, st.Leased)
	}
	ls, err := s2.Lease(1)
	if err != nil || len(ls) != 1 {
		t.Fatalf("lease after the crash: %v %v", ls, err)
	}
	if ls[0].URL != l.URL || ls[0].ID <= l.ID {
		t.Fatalf("lease after the crash %+v, want %s again under an ID above %d", ls[0], l.URL, l.ID)
	}
	res, err := s2.Apply(nil, []Outcome{*outcome(l, 200)})
	if err != nil || res.Stale != 1 || res.Outcomes != 0 {
		t.Fatalf("the forgotten lease's outcome: %+v %v, want stale", res, err)
	}

	// A flush of leases older than the open transaction commits nothing.
	if err := h.s.FlushOlder(time.Hour); err != nil {
		t.Fatal(err)
	}
	if st := crashCopy(t, h).Status(); st.Queued != 2 || st.Leased != 0 {
		t.Fatalf("crash after FlushOlder(1h): queued %d leased %d, want 2 0", st.Queued, st.Leased)
	}
	if err := h.s.Flush(); err != nil {
		t.Fatal(err)
	}
	s3 := crashCopy(t, h)
	if st := s3.Status(); st.Queued != 1 || st.Leased != 1 {
		t.Fatalf("crash after Flush: queued %d leased %d, want 1 1", st.Queued, st.Leased)
	}
	if res, err := s3.Apply(nil, []Outcome{*outcome(l, 200)}); err != nil || res.Outcomes != 1 {
		t.Fatalf("the committed lease's outcome after the crash: %+v %v", res, err)
	}
}

// TestReleaseRequeuesWithoutAttempt: a lease given back (a crawler
// stopped mid-fetch, or one that could not archive the page) puts its URL
// back in the queue at once, however often, without spending a retry or
// counting a status class; a released robots.txt lease lapses.
func TestReleaseRequeuesWithoutAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Politeness.MaxRetries = 1
	})
	h.seed("http://example.com/slow")
	for i := range 4 {
		l := h.leaseOne()
		if l.URL != "http://example.com/slow" {
			t.Fatalf("release %d: leased %+v", i, l)
		}
		res := h.apply(nil, &Outcome{LeaseID: l.ID, URL: l.URL, Released: true})
		if res.Outcomes != 1 {
			t.Fatalf("release %d: %+v", i, res)
		}
		e, _ := h.s.Explain(l.URL)
		if e.State != "queued" || e.Attempts != 0 {
			t.Fatalf("after release %d: state %s, attempts %d; want queued, 0", i, e.State, e.Attempts)
		}
		h.clock.Advance(time.Minute)
	}
	l := h.leaseOne()
	h.apply(nil, outcome(l, 200))
	if e, _ := h.s.Explain(l.URL); e.State != "done" || e.DoneReason != "fetched" {
		t.Fatalf("after the fetch: %+v", e)
	}
	c := h.s.counters()
	if c["retries"] != 0 || c["failed"] != 0 || c["done"] != 1 || c["outcome_2xx"] != 1 || c["outcome_error"] != 0 {
		t.Fatalf("counters %v", c)
	}
}
