package frontier

import (
	"fmt"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/parser"
)

// A URL that answers 429 (or 503) forever is finished after
// 1 + politeness.max_retries attempts with its reason, each attempt
// waiting out the Retry-After (or the back-off) first.
func TestRateLimitedURLFinishes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status     int
		retryAfter time.Duration
		reason     string
	}{
		{429, time.Second, "rate_limited"},
		{503, 0, "unavailable"},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			h := newHarness(t, noRobots)
			h.seed("http://example.com/a", "http://other.test/b")
			attempts := 0
			for i := 0; i < 100; i++ {
				ls := h.lease(10)
				var mine bool
				for _, l := range ls {
					if l.URL != "http://example.com/a" {
						h.apply(nil, outcome(l, 200))
						continue
					}
					mine = true
					attempts++
					o := outcome(l, tc.status)
					o.RetryAfter = tc.retryAfter
					h.apply(nil, o)
					want := tc.retryAfter
					if want == 0 {
						want = min(h.cfg.Politeness.BackoffBase<<(attempts-1), h.cfg.Politeness.BackoffMax)
					}
					if got := h.waitFor(); got >= 0 && got < want {
						t.Fatalf("attempt %d: next fetch of the host in %v, want at least %v", attempts, got, want)
					}
				}
				if !mine && h.s.Status().Queued == 0 && h.s.Status().Leased == 0 {
					break
				}
				h.clock.Advance(time.Hour)
			}
			st := h.s.Status()
			if want := 1 + h.cfg.Politeness.MaxRetries; attempts != want || st.Queued != 0 || st.Done != 2 {
				t.Fatalf("%d forever: %d attempts (want %d), queued %d, done %d (want 0, 2)", tc.status, attempts, want, st.Queued, st.Done)
			}
			e, err := h.s.Explain("http://example.com/a")
			if err != nil {
				t.Fatal(err)
			}
			if e.State != "done" || e.DoneReason != tc.reason || e.DoneStatus != tc.status {
				t.Errorf("explain: state %q reason %q status %d, want done %q %d", e.State, e.DoneReason, e.DoneStatus, tc.reason, tc.status)
			}
		})
	}
}

// A host that answers 429 to everything is given up once
// politeness.host_give_up distinct URLs answered 429/503 on their first
// try with no success between: its queued URLs are finished with reason
// host_gave_up and counted, none dropped.
func TestHostAnswering429IsGivenUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	h.seed(numbered("http://example.com/", 20)...)
	requests := 0
	for i := 0; i < 1000 && h.s.Status().Queued > 0; i++ {
		for _, l := range h.lease(10) {
			requests++
			o := outcome(l, 429)
			o.RetryAfter = time.Second
			h.apply(nil, o)
			if requests == 5 {
				// Paused, visibly: backing off, with its streak.
				st := h.s.Status()
				if st.HostsBackingOff != 1 || len(st.TopHosts) != 1 || st.TopHosts[0].Backoff != 5 {
					t.Errorf("after 5 429s: hosts backing off %d, top hosts %+v; want 1 with backoff 5", st.HostsBackingOff, st.TopHosts)
				}
			}
		}
		h.clock.Advance(time.Hour)
	}
	st := h.s.Status()
	// Each throttled URL's retry waits behind the others, so the first 10
	// requests go to 10 distinct URLs, and the 10th 429 gave up the host:
	// the URL that answered it, the 9 retries and the 10 never tried.
	want := map[string]uint64{"rate_limited": 0, "host_gave_up": 20}
	if st.Finished["rate_limited"] != want["rate_limited"] || st.Finished["host_gave_up"] != want["host_gave_up"] ||
		st.HostsGivenUp != 1 || st.HostsBackingOff != 0 {
		t.Errorf("finished %v, hosts given up %d, backing off %d; want %v, 1, 0", st.Finished, st.HostsGivenUp, st.HostsBackingOff, want)
	}
	if st.Queued != 0 || st.Leased != 0 || st.Done != 20 {
		t.Fatalf("after %d requests: queued %d leased %d done %d, want 0 0 20", requests, st.Queued, st.Leased, st.Done)
	}
	if requests > 10 {
		t.Errorf("%d requests to a host that answered 429 to each, want at most 10 (politeness.host_give_up)", requests)
	}
}

// A redirect chain /inc/N -> /inc/N+1: the hop count travels with the
// redirect link, is stored with the queued URL (through the inbox, a
// compaction and a reopen) and comes back in the lease; the redirect past
// scope.max_redirects is rejected and counted. Any other link starts a
// new chain.
func TestRedirectChainCappedThroughLeases(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	h.seed("http://example.com/inc/0")
	leases := 0
	for i := 0; i < 100; i++ {
		if i == 7 {
			if _, err := h.s.Checkpoint(); err != nil { // the inbox compacted into the queue
				t.Fatal(err)
			}
			h.reopen()
		}
		ls := h.lease(10)
		if len(ls) == 0 {
			break
		}
		l := ls[0]
		if l.Hops != uint32(i) {
			t.Fatalf("lease %d (%s) carries %d hops, want %d", i, l.URL, l.Hops, i)
		}
		leases++
		lb := &LinkBatch{Source: l.URL, Depth: l.Depth, Links: []Link{
			{URL: fmt.Sprintf("http://example.com/inc/%d", i+1), Kind: uint8(parser.KindRedirect), Hops: l.Hops + 1},
		}}
		o := outcome(l, 302)
		h.apply([]*LinkBatch{lb}, o)
		h.clock.Advance(time.Hour)
	}
	max := h.cfg.Scope.MaxRedirects
	st := h.s.Status()
	if leases != max+1 || st.Rejected["redirect_chain"] != 1 || st.Queued != 0 {
		t.Fatalf("chain: %d URLs leased (want %d: the seed and %d redirects), rejected %v, queued %d", leases, max+1, max, st.Rejected, st.Queued)
	}
	if got := h.s.counters()["rejected_redirect_chain"]; got != 1 {
		t.Errorf("counter rejected_redirect_chain = %d, want 1", got)
	}
	// A navigation link resets the count, whatever it claims.
	h.apply([]*LinkBatch{{Source: "http://example.com/inc/20", Depth: 20, Links: []Link{
		{URL: "http://example.com/page", Kind: uint8(parser.KindNavigation), Hops: 50},
	}}})
	if ls := h.lease(10); len(ls) != 1 || ls[0].Hops != 0 {
		t.Fatalf("a navigation link's lease: %+v, want one with 0 hops", ls)
	}
	// explain shows a queued URL's hops.
	h.apply([]*LinkBatch{{Source: "http://example.com/page", Depth: 21, Links: []Link{
		{URL: "http://example.com/moved", Kind: uint8(parser.KindRedirect), Hops: 3},
	}}})
	if e, err := h.s.Explain("http://example.com/moved"); err != nil || e.State != "queued" || e.Hops != 3 {
		t.Errorf("explain: state %q hops %d (%v), want queued with 3 hops", e.State, e.Hops, err)
	}
}

// throttleSite answers the leases of a harness as a site would: 429 with
// retryAfter for the URLs in throttled, 200 for the rest. It leases and
// answers until nothing is queued or leased, advancing the clock to the
// host's next fetch each round, and returns the URLs in the order leased.
func throttleSite(t *testing.T, h *harness, throttled map[string]bool, retryAfter time.Duration) []string {
	t.Helper()
	var order []string
	for i := 0; i < 1000; i++ {
		st := h.s.Status()
		if st.Queued == 0 && st.Leased == 0 {
			return order
		}
		for _, l := range h.lease(10) {
			order = append(order, l.URL)
			if !throttled[l.URL] {
				h.apply(nil, outcome(l, 200))
				continue
			}
			o := outcome(l, 429)
			o.RetryAfter = retryAfter
			h.apply(nil, o)
		}
		if d := h.waitFor(); d > 0 {
			h.clock.Advance(d)
		}
	}
	t.Fatalf("no end after 1000 rounds: leased %v", order)
	return nil
}

// A throttled URL's retry waits its turn behind the host's other queued
// URLs (it used to be leased again first), keeping its attempts through
// a compaction and a reopen; the host is not given up for one path,
// however often it answers 429.
func TestThrottledRetryWaitsBehindQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Politeness.HostGiveUp = 2 // one path's four 429s must not reach it
	})
	h.seed("http://example.com/s", "http://example.com/a", "http://example.com/b")
	l := h.leaseOne()
	if l.URL != "http://example.com/s" {
		t.Fatalf("first lease %s, want /s", l.URL)
	}
	o := outcome(l, 429)
	o.RetryAfter = time.Second
	h.apply(nil, o)
	if _, err := h.s.Checkpoint(); err != nil { // the retry compacted into the queue
		t.Fatal(err)
	}
	h.reopen()
	if e, err := h.s.Explain("http://example.com/s"); err != nil || e.State != "queued" || e.Attempts != 1 {
		t.Fatalf("explain /s after a 429 and a reopen: state %q attempts %d (%v), want queued 1", e.State, e.Attempts, err)
	}
	order := throttleSite(t, h, map[string]bool{"http://example.com/s": true}, time.Second)
	want := []string{"http://example.com/a", "http://example.com/b",
		"http://example.com/s", "http://example.com/s", "http://example.com/s"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("leased after the first 429 of /s: %v, want %v", order, want)
	}
	st := h.s.Status()
	if st.Finished["fetched"] != 2 || st.Finished["rate_limited"] != 1 || st.Finished["host_gave_up"] != 0 || st.HostsGivenUp != 0 {
		t.Errorf("finished %v, hosts given up %d; want fetched 2, rate_limited 1, none given up", st.Finished, st.HostsGivenUp)
	}
	if err := h.s.Verify(); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// The shop in the core: three search pages answering 429 forever
// and thirteen normal pages, the search links first, with the defaults.
// Every page is fetched, each search page finishes rate_limited after
// 1 + max_retries tries, and the host is not given up: the tries of a
// known throttled URL are no new evidence about the host.
func TestThrottledPathsDoNotGiveUpHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	urls := []string{"http://shop.test/search/0", "http://shop.test/search/1", "http://shop.test/search/2"}
	throttled := map[string]bool{}
	for _, u := range urls {
		throttled[u] = true
	}
	h.seed(append(urls, numbered("http://shop.test/page/", 13)...)...)
	order := throttleSite(t, h, throttled, 2*time.Second)
	st := h.s.Status()
	tries := 1 + h.cfg.Politeness.MaxRetries
	if len(order) != 13+3*tries || st.Finished["fetched"] != 13 || st.Finished["rate_limited"] != 3 || st.HostsGivenUp != 0 {
		t.Errorf("%d leases (want %d), finished %v, hosts given up %d; want 13 fetched, 3 rate_limited, 0 given up: %v",
			len(order), 13+3*tries, st.Finished, st.HostsGivenUp, order)
	}
}

// How long a 429 pauses its host: one path's Retry-After (here 10 days,
// capped at backoff_max) pauses the host at most backoff(1) while it has
// other URLs queued, and in full when the URL's retry is all it has left;
// distinct URLs throttled in a row raise the cap (backoff(level)), and
// the host_give_up-th gives the host up.
func TestThrottledHostPause(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	h.seed(numbered("http://example.com/", 12)...)
	p := h.cfg.Politeness
	for level := 1; level <= p.HostGiveUp; level++ {
		l := h.leaseOne()
		o := outcome(l, 429)
		o.RetryAfter = 240 * time.Hour
		h.apply(nil, o)
		if level == p.HostGiveUp {
			break
		}
		low := min(p.BackoffBase<<(level-1), p.BackoffMax)
		high := min(low+low/4, p.BackoffMax)
		if got := h.waitFor(); got < low || got > high {
			t.Errorf("429 on the %d-th distinct URL in a row: host paused %v, want [%v, %v]", level, got, low, high)
		}
		h.clock.Advance(time.Hour)
	}
	if st := h.s.Status(); st.HostsGivenUp != 1 || st.Finished["host_gave_up"] != 12 || st.Queued != 0 {
		t.Fatalf("after %d distinct URLs throttled in a row: finished %v, hosts given up %d, queued %d; want 12 host_gave_up, 1, 0",
			p.HostGiveUp, st.Finished, st.HostsGivenUp, st.Queued)
	}

	// On another host, a URL whose retry is all its host has left pauses
	// the host for its whole wait (capped at backoff_max).
	h.seed("http://other.test/a", "http://other.test/b")
	l := h.leaseOne()
	h.apply(nil, outcome(l, 200))
	h.clock.Advance(time.Hour)
	l = h.leaseOne()
	o := outcome(l, 429)
	o.RetryAfter = 240 * time.Hour
	h.apply(nil, o)
	if got := h.waitFor(); got != p.BackoffMax {
		t.Errorf("a lone URL's Retry-After of 10 days: host paused %v, want backoff_max %v", got, p.BackoffMax)
	}
}

// numbered is the URLs prefix0 ... prefix(n-1).
func numbered(prefix string, n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprint(prefix, i)
	}
	return urls
}

// A success resets the host's evidence: nine URLs throttled on their
// first try, one page fetched, nine more throttled, and their retries
// (which add nothing) do not give the host up with host_give_up 10; every
// throttled URL finishes rate_limited after its own tries.
func TestThrottleEvidenceResetsOnSuccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noRobots)
	urls := numbered("http://example.com/", 20)
	h.seed(urls...)
	throttled := map[string]bool{}
	for i, u := range urls {
		throttled[u] = i != 9 && i != 19
	}
	throttleSite(t, h, throttled, time.Second)
	st := h.s.Status()
	if st.Finished["fetched"] != 2 || st.Finished["rate_limited"] != 18 || st.HostsGivenUp != 0 {
		t.Errorf("finished %v, hosts given up %d; want 2 fetched, 18 rate_limited, none given up", st.Finished, st.HostsGivenUp)
	}
}
