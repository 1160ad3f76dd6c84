package frontier

import (
	"fmt"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/parser"
)

// A URL that answers 429 (or 503) forever is finished after
// 1 + politeness.max_retries attempts with its reason, each attempt
// waiting out the Retry-After (or the back-off) first.
func TestRateLimitedURLFinishes(t *testing.T) {
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

// A host that answers 429 to everything is given up after
// politeness.host_give_up consecutive 429/503 outcomes: its queued URLs
// are finished with reason host_gave_up and counted, none dropped.
func TestHostAnswering429IsGivenUp(t *testing.T) {
	h := newHarness(t, noRobots)
	var urls []string
	for i := range 20 {
		urls = append(urls, fmt.Sprintf("http://example.com/%d", i))
	}
	h.seed(urls...)
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
	// 2 URLs used up their 4 attempts, then the 10th 429 gave up the host:
	// the URL that answered it and the 17 queued.
	want := map[string]uint64{"rate_limited": 2, "host_gave_up": 18}
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
		lb := &msg.LinkBatch{Source: l.URL, Depth: l.Depth, Links: []msg.Link{
			{URL: fmt.Sprintf("http://example.com/inc/%d", i+1), Kind: uint8(parser.KindRedirect), Hops: l.Hops + 1},
		}}
		o := outcome(l, 302)
		h.apply([]*msg.LinkBatch{lb}, o)
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
	h.apply([]*msg.LinkBatch{{Source: "http://example.com/inc/20", Depth: 20, Links: []msg.Link{
		{URL: "http://example.com/page", Kind: uint8(parser.KindNavigation), Hops: 50},
	}}})
	if ls := h.lease(10); len(ls) != 1 || ls[0].Hops != 0 {
		t.Fatalf("a navigation link's lease: %+v, want one with 0 hops", ls)
	}
	// explain shows a queued URL's hops.
	h.apply([]*msg.LinkBatch{{Source: "http://example.com/page", Depth: 21, Links: []msg.Link{
		{URL: "http://example.com/moved", Kind: uint8(parser.KindRedirect), Hops: 3},
	}}})
	if e, err := h.s.Explain("http://example.com/moved"); err != nil || e.State != "queued" || e.Hops != 3 {
		t.Errorf("explain: state %q hops %d (%v), want queued with 3 hops", e.State, e.Hops, err)
	}
}
