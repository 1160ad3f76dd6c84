package frontier

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/frontier/internal/statetest"
	"github.com/trawlhq/trawl/internal/config"
)

// noRobots is a harness option for politeness tests robots.txt would
// only get in the way of.
func noRobots(c *config.Config) { statetest.NoRobots(c) }

// leaseOne leases and wants exactly one lease.
func (h *harness) leaseOne() Lease {
	h.t.Helper()
	ls := h.lease(10)
	if len(ls) != 1 {
		h.t.Fatalf("leased %d (%+v), want 1", len(ls), ls)
	}
	return ls[0]
}

// waitFor reports how long after now the next lease becomes possible.
func (h *harness) waitFor() time.Duration {
	t, ok := h.s.NextReady()
	if !ok {
		return -1
	}
	return t.Sub(h.clock.Now())
}

func TestPoliteDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		crawlDelay string // robots.txt Crawl-delay line, "" for none
		total      time.Duration
		want       time.Duration
	}{
		{"min delay", "", 100 * time.Millisecond, time.Second},
		{"delay factor", "", 3 * time.Second, 6 * time.Second},
		{"crawl-delay", "Crawl-delay: 5", 100 * time.Millisecond, 5 * time.Second},
		{"crawl-delay capped", "Crawl-delay: 100", 0, 30 * time.Second},
		{"factor beats crawl-delay", "Crawl-delay: 5", 4 * time.Second, 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.seed("http://example.com/a", "http://example.com/b")
			r := h.leaseOne()
			o := outcome(r, 200)
			o.Body = []byte("User-agent: *\n" + tc.crawlDelay + "\nAllow: /\n")
			h.apply(nil, o)
			h.clock.Advance(time.Hour)
			l := h.leaseOne()
			o = outcome(l, 200)
			o.ResponseTime = tc.total
			h.apply(nil, o)
			if got := h.waitFor(); got != tc.want {
				t.Fatalf("next fetch in %v, want %v", got, tc.want)
			}
			h.clock.Advance(tc.want - time.Nanosecond)
			if ls := h.lease(10); len(ls) != 0 {
				t.Fatalf("leased %+v before the delay passed", ls)
			}
			h.clock.Advance(time.Nanosecond)
			if l := h.leaseOne(); l.URL != "http://example.com/b" {
				t.Fatalf("leased %s, want /b", l.URL)
			}
		})
	}
}

func TestBackoff429(t *testing.T) {
	t.Parallel()
	// Retries and the host give-up high enough to watch the back-off grow
	// (TestRateLimitedURLFinishes and TestHostAnswering429IsGivenUp hold
	// the defaults).
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Politeness.MaxRetries = 100
		c.Politeness.HostGiveUp = 64
	})
	h.seed("http://example.com/a")
	// Retry-After wins over the politeness delay, capped at backoff_max.
	for _, tc := range []struct {
		retryAfter, want time.Duration
	}{
		{90 * time.Second, 90 * time.Second},
		{time.Hour, 10 * time.Minute},
	} {
		l := h.leaseOne()
		o := outcome(l, 429)
		o.RetryAfter = tc.retryAfter
		h.apply(nil, o)
		if got := h.waitFor(); got != tc.want {
			t.Errorf("Retry-After %v: next fetch in %v, want %v", tc.retryAfter, got, tc.want)
		}
		h.clock.Advance(tc.want)
	}
	// Without Retry-After: base x 2^(level-1) x jitter in [1, 1.25), capped.
	// The level is already 2 from the two 429s above.
	base, maxB := 5*time.Second, 10*time.Minute
	for level := 3; level <= 12; level++ {
		l := h.leaseOne()
		if l.URL != "http://example.com/a" {
			t.Fatalf("lease %s, want the requeued /a", l.URL)
		}
		status := 429
		if level%2 == 0 {
			status = 503
		}
		h.apply(nil, outcome(l, status))
		low := base << (level - 1)
		high := low + low/4
		if low >= maxB {
			low, high = maxB, maxB
		}
		got := h.waitFor()
		if got < low || got > high {
			t.Errorf("level %d: next fetch in %v, want [%v, %v]", level, got, low, high)
		}
		h.clock.Advance(got)
	}
	// A success resets the level: the next 429 waits base again.
	l := h.leaseOne()
	h.apply(nil, outcome(l, 200))
	h.seed("http://example.com/b")
	h.clock.Advance(time.Second)
	l = h.leaseOne()
	h.apply(nil, outcome(l, 429))
	if got := h.waitFor(); got < base || got > base+base/4 {
		t.Errorf("after success: next fetch in %v, want [%v, %v]", got, base, base+base/4)
	}
	if st := h.s.Status(); st.Done != 1 || st.Queued != 1 {
		t.Errorf("done %d queued %d, want 1 1 (429s requeue)", st.Done, st.Queued)
	}
}

func TestErrorStreakPausesHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Politeness.ErrorStreak = 3
		c.Politeness.ErrorPause = 10 * time.Minute
		c.Politeness.MaxRetries = 100
	})
	var urls []string
	for i := range 10 {
		urls = append(urls, fmt.Sprintf("http://example.com/%d", i))
	}
	h.seed(urls...)
	for i := 0; i < 2; i++ {
		h.apply(nil, outcome(h.leaseOne(), 500))
		if got := h.waitFor(); got != time.Second {
			t.Fatalf("error %d: next fetch in %v, want 1s", i+1, got)
		}
		h.clock.Advance(time.Second)
	}
	l := h.leaseOne()
	h.apply(nil, &Outcome{LeaseID: l.ID, URL: l.URL, Status: 0})
	if got := h.waitFor(); got != 10*time.Minute {
		t.Fatalf("after 3 errors: next fetch in %v, want the 10m pause", got)
	}
	h.clock.Advance(10 * time.Minute)
	// Paused, then retried; a success clears the streak.
	h.apply(nil, outcome(h.leaseOne(), 200))
	h.clock.Advance(time.Second)
	h.apply(nil, outcome(h.leaseOne(), 500))
	if got := h.waitFor(); got != time.Second {
		t.Fatalf("first error after a success: next fetch in %v, want 1s", got)
	}
}

func TestOneInflightPerHostAndOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	var urls []string
	for _, host := range []string{"a.example", "b.example", "c.example"} {
		for i := range 3 {
			urls = append(urls, fmt.Sprintf("http://%s/%d", host, i))
		}
	}
	h.seed(urls...)
	ls := h.lease(100)
	if len(ls) != 3 {
		t.Fatalf("leased %d, want one per host (3)", len(ls))
	}
	hosts := map[string]bool{}
	for _, l := range ls {
		hosts[hostOf(l.URL)] = true
	}
	if len(hosts) != 3 {
		t.Fatalf("leases %+v share a host", ls)
	}
	if more := h.lease(100); len(more) != 0 {
		t.Fatalf("leased %+v while every host has one in flight", more)
	}
	// Finish a.example fast, c.example slow: a is ready first.
	byHost := map[string]Lease{}
	for _, l := range ls {
		byHost[hostOf(l.URL)] = l
	}
	oc := outcome(byHost["c.example"], 200)
	oc.ResponseTime = 10 * time.Second // 20 s delay
	oa := outcome(byHost["a.example"], 200)
	ob := outcome(byHost["b.example"], 200)
	ob.ResponseTime = 2 * time.Second // 4 s delay
	h.apply(nil, oc, ob, oa)
	h.clock.Advance(time.Hour)
	var order []string
	for {
		ls := h.lease(1)
		if len(ls) == 0 {
			break
		}
		order = append(order, hostOf(ls[0].URL))
	}
	if fmt.Sprint(order) != "[a.example b.example c.example]" {
		t.Fatalf("lease order %v, want by next fetch time a, b, c", order)
	}
	// max_leases_per_reply caps a call.
	h2 := newHarness(t, func(c *config.Config) { noRobots(c); c.Frontier.MaxLeasesPerReply = 2 })
	h2.seed(urls...)
	if ls := h2.lease(100); len(ls) != 2 {
		t.Fatalf("leased %d with max_leases_per_reply 2", len(ls))
	}
}

func TestMaxInflightTwo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) { noRobots(c); c.Frontier.MaxInflightPerHost = 2 })
	h.seed("http://example.com/1", "http://example.com/2", "http://example.com/3")
	if ls := h.lease(10); len(ls) != 1 {
		t.Fatalf("leased %d in one call, want 1 (one per host per call)", len(ls))
	}
	h.clock.Advance(time.Second)
	if ls := h.lease(10); len(ls) != 1 {
		t.Fatalf("second lease: %d, want 1", len(ls))
	}
	h.clock.Advance(time.Second)
	if ls := h.lease(10); len(ls) != 0 {
		t.Fatalf("third lease with 2 in flight: %d, want 0", len(ls))
	}
}

func hostOf(u string) string {
	for i := len("http://"); i < len(u); i++ {
		if u[i] == '/' {
			return u[len("http://"):i]
		}
	}
	return u
}

// TestFetchedFreesTheSlot: a Fetched notice frees the host's slot before
// the outcome, sets the next fetch as a response does, never brings it
// forward, and is ignored for unknown, repeated, robots.txt and other
// shards' leases; the outcome and expiry that follow do not free the
// slot twice.
func TestFetchedFreesTheSlot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	h.seed("http://example.com/1", "http://example.com/2", "http://example.com/3", "http://example.com/4")
	l1 := h.leaseOne()
	if ls := h.lease(10); len(ls) != 0 {
		t.Fatalf("leased %+v with the host's one slot taken", ls)
	}
	for _, n := range []FetchNotice{{LeaseID: 999}, {LeaseID: l1.ID, Shard: 3}} {
		if h.s.Fetched(n) {
			t.Fatalf("notice %+v freed a slot", n)
		}
	}
	if !h.s.Fetched(FetchNotice{LeaseID: l1.ID, ResponseTime: 3 * time.Second}) {
		t.Fatal("the notice of a lease out freed nothing")
	}
	if h.s.Fetched(FetchNotice{LeaseID: l1.ID}) {
		t.Fatal("a second notice of the same lease freed a slot again")
	}
	if got := h.waitFor(); got != 6*time.Second { // delay_factor 2 x 3 s
		t.Fatalf("next fetch in %v after the notice, want 6s", got)
	}
	h.clock.Advance(6 * time.Second)
	l2 := h.leaseOne() // before l1's outcome
	if l2.URL != "http://example.com/2" {
		t.Fatalf("leased %s, want /2", l2.URL)
	}
	// l1's outcome finishes it without freeing a slot again, nor moving
	// the next fetch: l2 still holds the only slot.
	if res := h.apply(nil, outcome(l1, 200)); res.Outcomes != 1 {
		t.Fatalf("outcome after the notice: %+v", res)
	}
	h.clock.Advance(time.Hour)
	if ls := h.lease(10); len(ls) != 0 {
		t.Fatalf("leased %+v: the outcome freed l1's slot a second time", ls)
	}
	// A noticed lease that expires (the crawler died before its outcome)
	// goes back to the queue without freeing a slot twice.
	if !h.s.Fetched(FetchNotice{LeaseID: l2.ID}) {
		t.Fatal("notice of l2 freed nothing")
	}
	h.clock.Advance(time.Second)
	l3 := h.leaseOne()
	h.clock.Advance(2 * time.Minute)
	if n, _ := h.s.ExpireLeasesBefore(l3.Deadline); n != 2 {
		t.Fatalf("expired %d leases, want l2 and l3", n)
	}
	h.clock.Advance(time.Hour)
	if ls := h.lease(10); len(ls) != 1 || ls[0].URL != "http://example.com/2" {
		t.Fatalf("after expiry leased %+v, want /2 alone (one slot)", ls)
	}

	// A notice never brings a back-off forward: a 429 on one request,
	// then a notice for another one in flight with it.
	h2 := newHarness(t, func(c *config.Config) { noRobots(c); c.Frontier.MaxInflightPerHost = 2 })
	h2.seed("http://example.com/1", "http://example.com/2", "http://example.com/3")
	a := h2.leaseOne()
	h2.clock.Advance(time.Second)
	b := h2.leaseOne()
	h2.apply(nil, outcome(a, 429))
	backoff := h2.waitFor()
	if backoff < 5*time.Second {
		t.Fatalf("back-off after 429: %v", backoff)
	}
	h2.s.Fetched(FetchNotice{LeaseID: b.ID})
	if got := h2.waitFor(); got != backoff {
		t.Fatalf("a notice moved the back-off from %v to %v", backoff, got)
	}

	// robots.txt leases keep their slot until their outcome.
	h3 := newHarness(t, nil)
	h3.seed("http://example.com/1")
	r := h3.leaseOne()
	if !r.Robots || h3.s.Fetched(FetchNotice{LeaseID: r.ID}) {
		t.Fatalf("robots lease %+v: its notice freed a slot", r)
	}
}

// TestLeaseFillsFreeSlots: with no delay to keep between a host's leases
// (min_delay 0), one Lease call fills every free slot of a host, in queue
// order; with min_delay it grants one per host per call.
func TestLeaseFillsFreeSlots(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Frontier.MaxInflightPerHost = 3
		c.Politeness.MinDelay, c.Politeness.DelayFactor = 0, 0
	})
	h.seed("http://a.example/1", "http://a.example/2", "http://a.example/3", "http://a.example/4", "http://b.example/1")
	ls := h.lease(10)
	byHost := map[string][]string{}
	for _, l := range ls {
		byHost[hostOf(l.URL)] = append(byHost[hostOf(l.URL)], strings.TrimPrefix(l.URL, "http://"))
	}
	if got := fmt.Sprint(byHost); got != "map[a.example:[a.example/1 a.example/2 a.example/3] b.example:[b.example/1]]" {
		t.Fatalf("one call leased %v, want a.example's 3 slots filled in queue order and b.example's 1", got)
	}
	if more := h.lease(10); len(more) != 0 {
		t.Fatalf("leased %+v with every slot taken", more)
	}
	if !h.s.Fetched(FetchNotice{LeaseID: ls[0].ID}) || !h.s.Fetched(FetchNotice{LeaseID: ls[1].ID}) {
		t.Fatal("notices freed nothing")
	}
	if more := h.lease(10); len(more) != 1 || more[0].URL != "http://a.example/4" {
		t.Fatalf("after two notices leased %+v, want a.example/4 alone (its queue's last)", more)
	}

	h2 := newHarness(t, func(c *config.Config) { noRobots(c); c.Frontier.MaxInflightPerHost = 3 })
	h2.seed("http://a.example/1", "http://a.example/2")
	if ls := h2.lease(10); len(ls) != 1 {
		t.Fatalf("with min_delay 1s one call leased %d of one host, want 1", len(ls))
	}
}
