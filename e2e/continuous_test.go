package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/synthweb"
	"github.com/trawlhq/trawl/internal/testkit/clustertest"
)

// The continuous variant of TestClusterSurvivesCrawlerKill: the topology
// crawls a synthetic web whose pages change every 1-8 s (revisit.min 2s,
// initial 2s, max 4s) until every reachable page was fetched once, then a
// crawler is SIGKILLed (it always has revisits in flight) and a frontier
// shard SIGKILLed and restarted on its state file, and the crawl runs on
// for contE2ETail before the cluster stops. From the web's request log:
//
//   - nothing due is lost: after the kills, no reachable page waits
//     longer between two completed requests, or from its last one to
//     the stop, than revisit.max + contE2ESlack, + lease_timeout (the
//     killed processes' leases) + the frontier's restart when a kill
//     came meanwhile;
//   - no revisit fetched twice in one due period: no two completed
//     requests of a page closer than revisit.min less one due block (a
//     URL is promoted up to a block early). A crawler fetches a lease
//     only before its deadline and the frontier leases it again only
//     after, so such a pair needs a lease that expired while its fetch
//     was starting: that happens only about the kills (a killed shard's
//     leases expire while it is down, a killed crawler's when it dies).
//     Pairs whose second request lies within lease_timeout + slack of a
//     kill are counted and bounded; any other is a failure.
//
// And from the shards' state after the graceful stop: every page is
// done (a revisit the stop released is due again, so done).
const (
	contE2EMin   = 2 * time.Second
	contE2EMax   = 4 * time.Second
	contE2ELease = 5 * time.Second
	contE2EBlock = time.Second
	contE2ETail  = 25 * time.Second
	contE2ESlack = 5 * time.Second // a loaded machine's lease polls, commits, politeness
)

func TestClusterContinuousSurvivesKills(t *testing.T) {
	skipShort(t)
	wc := synthweb.DefaultConfig()
	wc.Hosts, wc.PagesPerHost = 20, 20
	wc.ErrorRate, wc.RedirectFraction, wc.BrokenLinkFraction = 0, 0, 0 // every completed request is a visit
	// Fetches that take 50 ms keep a few in flight on every crawler, so
	// that the killed one most likely dies mid-revisit.
	wc.Latency = 50 * time.Millisecond
	wc.Changes = synthweb.ChangeConfig{MinInterval: time.Second, MaxInterval: 8 * time.Second, NeverFraction: 0.2, NoValidatorsFraction: 0.2}
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	want := web.Reachable(synthweb.TruthOptions{})

	cfg := e2eConfig(web, 0, 1.0/64, contE2ELease)
	cfg["crawl"] = map[string]any{"mode": "continuous"}
	cfg["revisit"] = map[string]any{"min": contE2EMin.String(), "initial": contE2EMin.String(), "max": contE2EMax.String()}
	c := startCluster(t, cfg)
	c.Seed(web.Seeds())
	start := time.Now()
	c.Watch(6*time.Minute, 300*time.Millisecond, func(msg.Status) bool {
		rep := web.Report(synthweb.ReportOptions{})
		return rep.Fetched == rep.Want
	})
	t.Logf("every page of %d fetched once after %v", len(want), time.Since(start).Round(time.Millisecond))

	var kills []time.Time
	kills = append(kills, time.Now())
	c.Kill("crawler-1")
	t.Logf("SIGKILLed crawler-1")
	time.Sleep(time.Second)
	kills = append(kills, time.Now())
	c.Kill("frontier-0")
	time.Sleep(500 * time.Millisecond)
	c.Restart("frontier-0")
	c.Watch(time.Minute, 200*time.Millisecond, func(msg.Status) bool { return true }) // both shards answer
	downtime := time.Since(kills[1])
	t.Logf("SIGKILLed frontier-0, restarted it, serving %v after the kill", downtime.Round(time.Millisecond))
	time.Sleep(contE2ETail)
	last := c.Watch(time.Minute, 200*time.Millisecond, func(msg.Status) bool { return true })
	stopped := time.Now() // the last wait ends here: the stop takes seconds, crawlers first
	c.Stop()

	requests := map[string][]time.Time{}
	for _, r := range web.Requests() {
		if !r.Aborted && completed(r.Status) && !strings.HasSuffix(r.URL, "/robots.txt") {
			requests[r.URL] = append(requests[r.URL], r.Start)
		}
	}
	// A page waits at most revisit.max + slack; lease_timeout + the
	// restart more when a kill came meanwhile (or a lease before it).
	waitFor := func(from, to time.Time) time.Duration {
		for _, k := range kills {
			if k.After(from.Add(-contE2ELease)) && k.Before(to) {
				return contE2EMax + contE2ESlack + contE2ELease + downtime
			}
		}
		return contE2EMax + contE2ESlack
	}
	early := contE2EMin - contE2EBlock
	nearKill := func(at time.Time) bool {
		for _, k := range kills {
			if at.After(k.Add(-contE2ELease)) && at.Before(k.Add(downtime+contE2ELease+contE2ESlack)) {
				return true
			}
		}
		return false
	}
	var visits, late, dupKill, dupOther, expired int
	var longest time.Duration
	for _, u := range want {
		times := requests[u]
		if len(times) == 0 {
			t.Errorf("%s was never fetched", u)
			continue
		}
		slices.SortFunc(times, time.Time.Compare)
		visits += len(times)
		for i, at := range append(times[1:], stopped) {
			gap, wait := at.Sub(times[i]), waitFor(times[i], at)
			if times[i].Before(kills[0]) && at.After(kills[0]) && gap >= contE2ELease {
				expired++ // most likely held by the killed crawler: leased again at its deadline
			}
			longest = max(longest, gap)
			if gap > wait && at.After(kills[0]) { // the first pass queues new pages ahead of revisits
				late++
				t.Errorf("%s waited %v from %s to %s, over its bound %v (revisit.max + slack, + lease_timeout + restart for a kill)", u, gap.Round(time.Millisecond), clockOf(times[i]), clockOf(at), wait)
			}
			if i+1 < len(times) && gap < early {
				if nearKill(at) {
					dupKill++
					continue
				}
				dupOther++
				t.Errorf("%s fetched twice within %v, at %s and %s, away from the kills", u, gap.Round(time.Millisecond), clockOf(times[i]), clockOf(at))
			}
		}
	}
	t.Logf("%d pages waited lease_timeout or more across the crawler's kill (its leases expiring; 0: it died between fetches)", expired)
	t.Logf("%d pages, %d completed requests (%.1f per page), %d late, %d fetched twice in a due period about a kill, %d elsewhere; longest wait %v (bounds %v, %v about a kill); frontier: %+v",
		len(want), visits, float64(visits)/float64(len(want)), late, dupKill, dupOther, longest.Round(time.Millisecond),
		contE2EMax+contE2ESlack, (contE2EMax + contE2ESlack + contE2ELease + downtime).Round(time.Millisecond), last.Revisit)
	// A killed crawler's leases are fetched again after they expire, not
	// twice within a due period; a shard's restart re-leases nothing early.
	// At most one pair per fetch and publish slot of the killed crawler (2 x 24).
	if dupKill > 48 {
		t.Errorf("%d pages fetched twice within a due period about the kills, more than the killed crawler's 48 slots", dupKill)
	}
	if visits < 3*len(want) {
		t.Errorf("%d completed requests for %d pages: the crawl did not revisit each page several times", visits, len(want))
	}

	// Schedules survive: every page is done with a schedule.
	done := frontierDone(t, c, clustertest.Topology{Shards: 2}, want)
	for _, u := range want {
		if !done[u] {
			t.Errorf("%s is not done in its shard after the stop", u)
		}
	}
}

func clockOf(t time.Time) string { return t.UTC().Format("15:04:05.000") }
