package frontier

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
)

func robotsOutcome(l Lease, status int, body string) *Outcome {
	o := outcome(l, status)
	o.Body = []byte(body)
	return o
}

func TestRobotsTTLRefetch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.seed("https://example.com/1", "https://example.com/2", "https://example.com/3")
	r := h.leaseOne()
	if !r.Robots || r.URL != "https://example.com/robots.txt" {
		t.Fatalf("first lease %+v, want the https robots.txt", r)
	}
	h.apply(nil, robotsOutcome(r, 200, "User-agent: *\nDisallow: /2\n"))
	// The seed host made links to it admissible; its first robots.txt
	// only denies.
	if n := h.s.Loosened(); n != 1 {
		t.Errorf("Loosened = %d after a seed host and its first robots.txt, want 1", n)
	}
	h.clock.Advance(time.Second)
	if l := h.leaseOne(); l.Robots || l.URL != "https://example.com/1" {
		t.Fatalf("lease %+v, want /1", l)
	}
	// Leave /1 out; robots.txt ages past its TTL meanwhile.
	h.clock.Advance(25 * time.Hour)
	if n, err := h.s.expireLeases(); err != nil || n != 1 {
		t.Fatalf("ExpireLeasesBefore = %d, %v", n, err)
	}
	r = h.leaseOne()
	if !r.Robots {
		t.Fatalf("lease after the TTL %+v, want robots.txt", r)
	}
	// The robots lease expires too: the next lease is robots.txt again.
	h.clock.Advance(3 * time.Minute)
	if n, _ := h.s.expireLeases(); n != 1 {
		t.Fatalf("robots lease not expired")
	}
	r = h.leaseOne()
	if !r.Robots {
		t.Fatalf("lease after an expired robots lease %+v, want robots.txt", r)
	}
	h.apply(nil, robotsOutcome(r, 200, "User-agent: *\nDisallow: /1\n"))
	// Rules that denied /2 are replaced: /2 may be admitted now.
	if n := h.s.Loosened(); n != 2 {
		t.Errorf("Loosened = %d after robots.txt was replaced, want 2", n)
	}
	h.clock.Advance(time.Second)
	// /1 is now disallowed and dropped, /2 allowed.
	if l := h.leaseOne(); l.URL != "https://example.com/2" {
		t.Fatalf("lease %+v, want /2 (/1 now disallowed)", l)
	}
	st := h.s.Status()
	if st.RobotsDenied != 1 || st.Done != 1 {
		t.Fatalf("robots denied %d done %d, want 1 1", st.RobotsDenied, st.Done)
	}
	e, err := h.s.Explain("https://example.com/1")
	if err != nil || e.State != "done" || e.DoneReason != "robots" || e.HostState.RobotsAllowed == nil || *e.HostState.RobotsAllowed {
		t.Fatalf("explain /1: %+v %v", e, err)
	}
}

func TestRobots4xxAllowsAll(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.seed("http://example.com/private", "http://example.com/x")
	h.apply(nil, robotsOutcome(h.leaseOne(), 404, "User-agent: *\nDisallow: /\n"))
	for _, want := range []string{"http://example.com/private", "http://example.com/x"} {
		h.clock.Advance(time.Second)
		l := h.leaseOne()
		if l.URL != want {
			t.Fatalf("lease %s, want %s", l.URL, want)
		}
		h.apply(nil, outcome(l, 200))
	}
	// A link admitted later is not checked against a 404 robots.txt.
	res := h.apply([]*LinkBatch{links("http://example.com/", 0, "http://example.com/more")})
	if res.Admitted != 1 {
		t.Fatalf("admitted %d, want 1", res.Admitted)
	}
}

func TestRobots5xxKeepsQueuedUntilRetrySucceeds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) { c.Politeness.MaxRetries = 4 })
	h.seed("http://example.com/a", "http://example.com/b")
	for i, status := range []int{503, 500, 0, 429} {
		r := h.leaseOne()
		if !r.Robots {
			t.Fatalf("attempt %d: lease %+v, want robots.txt", i, r)
		}
		h.apply(nil, robotsOutcome(r, status, ""))
		wait := h.waitFor()
		if wait < 5*time.Second {
			t.Fatalf("attempt %d: robots retry in %v, want a back-off", i, wait)
		}
		h.clock.Advance(wait - time.Nanosecond)
		if ls := h.lease(10); len(ls) != 0 {
			t.Fatalf("attempt %d: leased %+v during the back-off", i, ls)
		}
		h.clock.Advance(time.Nanosecond)
		if st := h.s.Status(); st.Queued != 2 || st.Done != 0 || st.RobotsDenied != 0 {
			t.Fatalf("attempt %d: queued %d done %d denied %d, want URLs kept queued", i, st.Queued, st.Done, st.RobotsDenied)
		}
	}
	h.apply(nil, robotsOutcome(h.leaseOne(), 200, "User-agent: *\nAllow: /\n"))
	h.clock.Advance(time.Second)
	if l := h.leaseOne(); l.Robots || l.URL != "http://example.com/a" {
		t.Fatalf("after robots success: %+v, want /a", l)
	}
}

// A robots.txt that stays unavailable through 1 + max_retries attempts
// gives up the host's queued URLs (recorded as done, robots-unavailable),
// so a crawl of an unreachable site ends; a URL admitted later starts a new
// round of attempts.
func TestRobotsUnavailableGivesUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) { c.Politeness.MaxRetries = 2 })
	h.seed("http://down.example/a", "http://down.example/b", "http://up.example/")
	robotsOf := func(host string) Lease {
		t.Helper()
		for i := 0; i < 4; i++ {
			for _, l := range h.lease(10) {
				if l.Robots && strings.Contains(l.URL, host) {
					return l
				}
				h.apply(nil, robotsOutcome(l, 404, "")) // other hosts: allow all
			}
			h.clock.Advance(h.waitFor())
		}
		t.Fatalf("no robots lease for %s", host)
		return Lease{}
	}
	for attempt := 1; attempt <= 3; attempt++ {
		if st := h.s.Status(); st.Done != 0 || st.Rejected["robots_unavailable"] != 0 {
			t.Fatalf("attempt %d: gave up early: %+v", attempt, st)
		}
		h.apply(nil, robotsOutcome(robotsOf("down.example"), 0, ""))
	}
	st := h.s.Status()
	if st.Rejected["robots_unavailable"] != 2 || st.Done != 2 {
		t.Fatalf("after 3 unavailable robots.txt: %d given up, %d done; want both queued URLs given up", st.Rejected["robots_unavailable"], st.Done)
	}
	for _, u := range []string{"http://down.example/a", "http://down.example/b"} {
		e, err := h.s.Explain(u)
		if err != nil || e.State != "done" || e.DoneReason != "robots-unavailable" {
			t.Fatalf("explain %s: %+v %v", u, e, err)
		}
	}
	if err := h.s.Verify(); err != nil {
		t.Fatalf("invariant after giving up: %v", err)
	}
	// New work for the host: robots.txt is tried again, and a success lets
	// the URL through.
	h.apply([]*LinkBatch{links("http://up.example/", 0, "http://down.example/c")})
	h.apply(nil, robotsOutcome(robotsOf("down.example"), 200, "User-agent: *\nAllow: /\n"))
	h.clock.Advance(h.waitFor())
	if l := h.leaseOne(); l.URL != "http://down.example/c" {
		t.Fatalf("lease %+v, want /c once robots.txt answers", l)
	}
}

func TestRobotsDeniesAtAdmission(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.seed("http://example.com/")
	h.apply(nil, robotsOutcome(h.leaseOne(), 200, "User-agent: trawl\nDisallow: /no\n\nUser-agent: *\nDisallow: /\n"))
	res := h.apply([]*LinkBatch{links("http://example.com/", 0, "http://example.com/no/1", "http://example.com/yes")})
	if res.RobotsDenied != 1 || res.Admitted != 1 {
		t.Fatalf("denied %d admitted %d, want 1 1 (group trawl applies)", res.RobotsDenied, res.Admitted)
	}
	if st := h.s.Status(); st.RobotsDenied != 1 {
		t.Fatalf("status robots denied %d", st.RobotsDenied)
	}
}

func TestRobotsObeyOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) { c.Robots.Obey = false })
	h.seed("http://example.com/")
	if l := h.leaseOne(); l.Robots {
		t.Fatalf("robots lease with robots.obey false: %+v", l)
	}
}

// TestHostSize keeps the host table's memory where it is: a shard holds
// one host for every host it knows, a million on a broad crawl, so 8 more
// bytes a host is 8 MB. Growing it should be a choice, made here.
func TestHostSize(t *testing.T) {
	t.Parallel()
	// The revisit schedule's fields (SchedSeq, NextDue, Scheduled, DueN:
	// 24 bytes) and the revisit share credit took them from 120 and 192:
	// what a continuous crawl keeps per host instead of anything per done
	// URL.
	if got := unsafe.Sizeof(store.HostRecord{}); got > 144 {
		t.Errorf("hostRecord is %d bytes, more than 144", got)
	}
	if got := unsafe.Sizeof(host{}); got > 224 {
		t.Errorf("host is %d bytes, more than 224", got)
	}
}
