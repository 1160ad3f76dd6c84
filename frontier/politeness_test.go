package frontier

import (
	"fmt"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// noRobots is a harness option for politeness tests robots.txt would
// only get in the way of.
func noRobots(c *config.Config) {
	c.Robots.Obey = false
	c.Scope.SeedHostsOnly = false
}

// leaseOne leases and wants exactly one lease.
func (h *harness) leaseOne() msg.Lease {
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
			o.Timings.Total = tc.total
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
	h.apply(nil, &msg.Outcome{LeaseID: l.ID, URL: l.URL, Status: 0, Error: "connection refused"})
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
	byHost := map[string]msg.Lease{}
	for _, l := range ls {
		byHost[hostOf(l.URL)] = l
	}
	oc := outcome(byHost["c.example"], 200)
	oc.Timings.Total = 10 * time.Second // 20 s delay
	oa := outcome(byHost["a.example"], 200)
	ob := outcome(byHost["b.example"], 200)
	ob.Timings.Total = 2 * time.Second // 4 s delay
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
