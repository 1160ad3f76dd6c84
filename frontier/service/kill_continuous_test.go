package service

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// The kill -9 test of a continuous crawl. The parent runs an embedded
// nats-server, a synthetic web whose pages change every 1-8 s (some never,
// two hosts of eight without validators) and a crawler that fetches
// every lease from it, conditional GETs included. The frontier child of
// TestKill9 (in continuous mode, revisit.min 2s, initial 2s, max 4s,
// lease_timeout 2s) is SIGKILLed at a random moment and restarted on the
// same state file, contRounds times (-soak: contSoakRounds); once, the
// crawler takes a reply of revisit leases, fetches them and reports
// nothing, as a crawler killed mid-revisit would. A last child then
// serves contTail and stops gracefully. checkContinuous holds the web's
// request log and the state file to the schedule's promises:
//
//   - schedules survive: every fetched URL is done with a schedule;
//   - nothing due is lost: no URL waits longer between two requests, or
//     from its last one to the stop, than revisit.max (its latest due
//     time) + contSlack, + lease_timeout when an abandoned revisit held
//     its host's one fetch slot meanwhile, + lease_timeout + the longest
//     restart when a kill came meanwhile (a lease the killed child
//     granted comes back at its deadline); stretches in which the whole
//     crawl stood still and the frontier never answered "nothing to
//     lease" (a starved machine) do not count (see stalled);
//   - no revisit fetched twice in one due period: no two requests of a
//     URL closer than revisit.min less one due block (a URL is promoted
//     up to one block early; see frontier/schedule.go), unless a kill
//     came between them and at most contForgotten after the first: a
//     lease is group-committed after its reply, so a kill may forget it
//     and the next child leases the URL again (counted and bounded). A
//     lease that expires, its outcome cut by a kill or never sent, is
//     leased again lease_timeout after it was granted, more than that
//     gap, so it is never such a pair;
//   - the abandoned revisits expire and are each requested once more, not
//     before their lease deadline.
const (
	contRounds     = 3
	contSoakRounds = 30
	contHosts      = 8
	contPages      = 8
	contMin        = 2 * time.Second
	contInitial    = 2 * time.Second
	contMax        = 4 * time.Second
	contLease      = 2 * time.Second
	contBlock      = time.Second // the due block at revisit.min 2s: min/4, at least a second
	contTail       = 12 * time.Second
	// contSlack is what a loaded machine adds to a due URL's wait: the
	// lease loop's polls, commits and a fetch.
	contSlack = 3 * time.Second
	// contStill is the longest stretch a running crawl of 64 pages due
	// every 2-4 s goes without a page request (see stalled).
	contStill = time.Second
	// contForgotten is how long before a kill a lease may have been
	// granted and not committed (leases are group-committed within two
	// commit intervals, 5 ms here; see docs/operations.md, Durability),
	// with its fetch: the child's replacement leases the URL again.
	contForgotten = time.Second
)

// continuousKillConfig is TestKill9's configuration in continuous mode
// with the short revisit bounds above.
func continuousKillConfig(cfg config.Config) config.Config {
	cfg.Crawl.Mode = "continuous"
	cfg.Revisit.Min, cfg.Revisit.Initial, cfg.Revisit.Max = contMin, contInitial, contMax
	cfg.Frontier.LeaseTimeout = contLease
	return cfg
}

// contCrawler is the parent's crawler for TestKill9Continuous.
type contCrawler struct {
	t      *testing.T
	nc     *nats.Conn
	js     jetstream.JetStream
	subj   msg.Subjects
	client *http.Client

	abandonAfter time.Time // take the first revisit reply after this, and report nothing

	mu                                    sync.Mutex
	leases, reported, notModified, robots int
	abandoned                             map[string]time.Time // URL -> its abandoned lease's deadline
	empty, failed                         []time.Time          // lease requests answered with none, or not answered
}

func TestKill9Continuous(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	rounds := contRounds
	if *soak {
		rounds = contSoakRounds
	}
	wc := synthweb.Config{
		Hosts: contHosts, PagesPerHost: contPages, OutDegree: 2, Seed: 42,
		Changes: synthweb.ChangeConfig{MinInterval: time.Second, MaxInterval: 8 * time.Second, NeverFraction: 0.2, NoValidatorsFraction: 0.25},
	}
	web, err := synthweb.Start(context.Background(), wc)
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	urls := web.Reachable(synthweb.TruthOptions{})

	e, file, cfg, nc, js := killBus(t, continuousKillConfig)
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	seeds := msg.LinkBatch{}
	for _, u := range urls {
		seeds.Links = append(seeds.Links, msg.Link{URL: u, Kind: 1})
	}
	b, err := seeds.MarshalBinary()
	if err == nil {
		_, err = js.Publish(ctx, msg.NewSubjects(cfg.NATS.Prefix).Links(0), b)
	}
	cancel()
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	cr := &contCrawler{t: t, nc: nc, js: js, subj: msg.NewSubjects(cfg.NATS.Prefix), client: web.Client(),
		abandonAfter: start.Add(contMax), abandoned: map[string]time.Time{}}
	crawlCtx, stopCrawl := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { cr.crawl(crawlCtx) })
	defer func() { stopCrawl(); wg.Wait() }()

	var kills []time.Time
	var downtime time.Duration // the longest, from a kill to the next child serving
	var outs []*bytes.Buffer
	defer func() {
		if t.Failed() {
			for i, out := range outs {
				b := out.Bytes()
				t.Logf("child %d's output (the last 3,000 bytes):\n%s", i, b[max(0, len(b)-3000):])
			}
		}
	}()
	serve := func() (*exec.Cmd, *bytes.Buffer) {
		child, out := startKillChild(t, e.ClientURL(), file, killEnvContinuous+"=1")
		outs = append(outs, out)
		waitChildServing(t, nc, cr.subj, child, out)
		if n := len(kills); n > 0 {
			downtime = max(downtime, time.Since(kills[n-1]))
		}
		return child, out
	}
	for round := range rounds {
		child, out := serve()
		time.Sleep(time.Duration(300+rand.IntN(2200)) * time.Millisecond)
		kills = append(kills, time.Now())
		sigkill(t, round, child, out)
	}
	child, out := serve()
	time.Sleep(contTail)
	stopped := time.Now() // the last wait ends here: no request comes after
	stopCrawl()
	wg.Wait()
	waitDrained(t, nc, cr.subj)
	var status *msg.Status
	if m, err := nc.Request(cr.subj.Status(), nil, svcWait); err != nil {
		t.Fatalf("status: %v", err)
	} else if status, err = msg.UnmarshalStatus(m.Data); err != nil {
		t.Fatalf("status: %v", err)
	}
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("final child: %v\n%s", err, out)
	}
	t.Logf("%d kills, longest restart %v, stopped after %v", len(kills), downtime.Round(time.Millisecond), stopped.Sub(start).Round(time.Millisecond))

	st := reopenVerified(t, cfg, rounds)
	cr.check(st, web, urls, kills, downtime, stopped, status)
}

// crawl leases and fetches until ctx is done, reporting every outcome but
// those of the one abandoned reply.
func (c *contCrawler) crawl(ctx context.Context) {
	leaseReplies(ctx, c.t, c.nc, c.subj, "kill-continuous", func(_ *nats.Msg, rep *msg.LeaseReply) {
		abandon := false
		c.mu.Lock()
		c.leases += len(rep.Leases)
		if len(c.abandoned) == 0 && time.Now().After(c.abandonAfter) {
			for _, ls := range rep.Leases {
				abandon = abandon || ls.Revisit
			}
		}
		c.mu.Unlock()
		for _, ls := range rep.Leases {
			o := c.fetch(ctx, rep.Shard, &ls)
			if o == nil {
				continue
			}
			if abandon {
				if !ls.Robots {
					c.mu.Lock()
					c.abandoned[ls.URL] = ls.Deadline
					c.mu.Unlock()
				}
				continue
			}
			c.report(ctx, o)
		}
	}, func(err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.failed = append(c.failed, time.Now())
		} else {
			c.empty = append(c.empty, time.Now())
		}
	})
}

// fetch requests ls's URL from the web, with the lease's validators, and
// returns its outcome; nil when ctx ended first.
func (c *contCrawler) fetch(ctx context.Context, shard uint32, ls *msg.Lease) *msg.Outcome {
	o := &msg.Outcome{LeaseID: ls.ID, Shard: shard, URL: ls.URL, Robots: ls.Robots, FetchedAt: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ls.URL, nil)
	if err != nil {
		c.t.Errorf("lease of %q: %v", ls.URL, err)
		return nil
	}
	if ls.ETag != "" {
		req.Header.Set("If-None-Match", ls.ETag)
	}
	if !ls.LastModified.IsZero() {
		req.Header.Set("If-Modified-Since", ls.LastModified.UTC().Format(http.TimeFormat))
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		o.Timings.Total = time.Since(o.FetchedAt)
		return o // no response: status 0
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil && ctx.Err() != nil {
		return nil
	}
	o.Status, o.Timings.Total = resp.StatusCode, time.Since(o.FetchedAt)
	if ls.Robots {
		o.Body = body
		return o
	}
	o.ContentType, o.ETag = resp.Header.Get("Content-Type"), resp.Header.Get("ETag")
	if lm, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		o.LastModified = lm
	}
	if resp.StatusCode == http.StatusOK {
		sum := sha1.Sum(body)
		o.Digest = binary.BigEndian.Uint64(sum[:8])
		if o.Digest != ls.Digest {
			o.ArchivedAt = o.FetchedAt // a full response record
		}
	}
	return o
}

// report publishes o, and counts it once the stream acked it.
func (c *contCrawler) report(ctx context.Context, o *msg.Outcome) {
	b, err := o.MarshalBinary()
	if err != nil {
		c.t.Error(err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := c.js.Publish(pctx, c.subj.Done(int(o.Shard)), b); err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reported++
	switch {
	case o.Robots:
		c.robots++
	case o.Status == http.StatusNotModified:
		c.notModified++
	}
}

// check holds the web's request log and the state to the promises of the
// test's comment.
func (c *contCrawler) check(st *frontier.State, web *synthweb.Web, urls []string, kills []time.Time, downtime time.Duration, stopped time.Time, status *msg.Status) {
	t := c.t
	c.mu.Lock()
	defer c.mu.Unlock()
	requests := map[string][]time.Time{}
	var all []time.Time // every page request, in order
	for _, r := range web.Requests() {
		if r.Target != "/robots.txt" {
			requests[r.URL] = append(requests[r.URL], r.Start)
			all = append(all, r.Start)
		}
	}
	slices.SortFunc(all, time.Time.Compare)
	first := stopped
	if len(all) > 0 {
		first = all[0]
	}
	// Nothing due is lost: a page waits at most revisit.max + contSlack
	// from one request to the next; lease_timeout more when its host's
	// one fetch slot was held by an abandoned revisit in the meantime;
	// lease_timeout + the restart more when a kill came in the meantime
	// (or just before it: a lease the killed child granted expires).
	slotHeld := map[string][]time.Time{} // host -> its abandoned leases' deadlines
	for u, d := range c.abandoned {
		slotHeld[hostOf(u)] = append(slotHeld[hostOf(u)], d)
	}
	waitFor := func(u string, from, to time.Time) time.Duration {
		w := contMax + contSlack
		for _, d := range slotHeld[hostOf(u)] {
			if d.After(from) && d.Add(-contLease).Before(to) {
				w += contLease
				break
			}
		}
		if killedBetween(kills, from.Add(-contLease), to) {
			w += contLease + downtime
		}
		return w
	}
	var tight struct{ gap, bound time.Duration } // the wait closest to its bound
	early := contMin - contBlock                 // no revisit twice in a due period
	var visits, duplicates, forgotten, late, closeButOK int
	var longest time.Duration
	for _, u := range urls {
		times := requests[u]
		slices.SortFunc(times, time.Time.Compare)
		if len(times) == 0 {
			t.Errorf("%s was never fetched", u)
			continue
		}
		visits += len(times)
		// Schedules survive: done (or leased again) with a schedule.
		ex, err := st.Explain(u)
		if err != nil {
			t.Fatalf("explain %s: %v", u, err)
		}
		if (ex.State != "done" && ex.State != "leased") || ex.Schedule == nil {
			t.Errorf("%s was fetched %d times, last at %s, but is %s with schedule %+v", u, len(times), clock(times[len(times)-1]), ex.State, ex.Schedule)
			continue
		}
		if s := ex.Schedule; s.Interval < contMin || s.Interval > contMax {
			t.Errorf("%s is scheduled at an interval of %v, outside revisit.min..max", u, s.Interval)
		}
		for i, at := range append(times[1:], stopped) {
			gap, wait := at.Sub(times[i]), waitFor(u, times[i], at)
			gap -= stalled(all, c.empty, times[i], at)
			longest = max(longest, gap)
			if gap > wait {
				if late++; late == 1 {
					t.Logf("between %s and %s the crawler got %d empty lease replies and %d requests failed",
						clock(times[i]), clock(at), within(c.empty, times[i], at), within(c.failed, times[i], at))
				}
				t.Errorf("%s waited %v from %s to %s, over its bound %v (revisit.max + slack, + lease_timeout for a held slot, + lease_timeout + restart for a kill; kills at %s)",
					u, gap.Round(time.Millisecond), clock(times[i]), clock(at), wait, clocks(kills))
			}
			if tight.bound == 0 || wait-gap < tight.bound-tight.gap {
				tight.gap, tight.bound = gap, wait
			}
			switch {
			case i+1 == len(times) || gap >= contMin:
			case gap >= early:
				closeButOK++ // up to one due block early
			case killedBetween(kills, times[i].Add(-contForgotten), at):
				forgotten++ // a lease the killed child had not committed
			default:
				duplicates++
				t.Errorf("%s fetched twice within %v, at %s and %s, no kill between (kills at %s)", u, gap.Round(time.Millisecond), clock(times[i]), clock(at), clocks(kills))
			}
		}
		// The abandoned revisit expired and was requested once more, not
		// before its deadline: one request (the abandoned fetch) while
		// its lease was out (two if a kill forgot the lease), at least
		// one after.
		if deadline, ok := c.abandoned[u]; ok {
			var during, after int
			for _, at := range times {
				switch {
				case at.After(deadline.Add(-contLease)) && at.Before(deadline):
					during++
				case !at.Before(deadline):
					after++
				}
			}
			if (during != 1 && !killedBetween(kills, deadline.Add(-contLease), deadline)) || after == 0 {
				t.Errorf("%s: its abandoned revisit's lease (deadline %s) saw %d requests while out (want 1) and %d after (want some): %s",
					u, clock(deadline), during, after, clocks(times))
			}
		}
	}
	var abandoned []string
	for u := range c.abandoned {
		abandoned = append(abandoned, u)
	}
	t.Logf("%d URLs, %d page requests (%.1f per URL), %d early by up to a due block, %d fetched again after a kill forgot their lease, %d duplicates, %d late; longest wait %v, closest to its bound %v of %v; the crawl stood still %v in all",
		len(urls), visits, float64(visits)/float64(max(len(urls), 1)), closeButOK, forgotten, duplicates, late, longest.Round(time.Millisecond), tight.gap.Round(time.Millisecond), tight.bound.Round(time.Millisecond),
		stalled(all, c.empty, first, stopped).Round(time.Millisecond))
	t.Logf("crawler: %d leases, %d outcomes reported (%d robots, %d not modified); %d revisits abandoned: %v", c.leases, c.reported, c.robots, c.notModified, len(abandoned), abandoned)
	if r := status.Revisit; r != nil {
		t.Logf("frontier: %d revisits, %d not modified, %d changed, %d unchanged; %d scheduled, %d due", r.Revisits, r.NotModified, r.Changed, r.Unchanged, r.Scheduled, r.Due)
		if r.NotModified == 0 || r.Changed == 0 || r.Unchanged == 0 {
			t.Errorf("the revisits did not see every kind of visit (304, changed, same digest): %+v", r)
		}
		if r.Scheduled != int64(len(urls)) {
			t.Errorf("the final child scheduled %d URLs, want all %d", r.Scheduled, len(urls))
		}
	} else {
		t.Error("the final child's status has no revisit section: not in continuous mode")
	}
	// A kill forgets at most the leases of the replies of its last two
	// commit intervals: one reply here (a host's one slot each).
	if forgotten > len(kills)*contHosts {
		t.Errorf("%d pages fetched again after a kill forgot their lease, more than %d kills x %d hosts", forgotten, len(kills), contHosts)
	}
	if len(abandoned) == 0 {
		t.Error("the crawler abandoned no revisit: the test did not exercise an expired revisit lease")
	}
	if visits < 3*len(urls) {
		t.Errorf("%d page requests for %d URLs: the crawl did not revisit each URL several times", visits, len(urls))
	}
}

// killedBetween reports whether a kill lies in [from, to].
func killedBetween(kills []time.Time, from, to time.Time) bool {
	for _, k := range kills {
		if !k.Before(from) && !k.After(to) {
			return true
		}
	}
	return false
}

// stalled is how long the crawl stood still between from and to: the
// stretches of more than contStill without a page request (all, sorted)
// in which no lease reply came back empty, less contStill each. The
// frontier was not answering (restarting, or starved of CPU with the
// test on a loaded machine), or the crawler itself did not run: not the
// schedule's doing. A stretch in which the frontier said it had nothing
// to lease while a page was due counts against the schedule.
func stalled(all, empty []time.Time, from, to time.Time) time.Duration {
	var d time.Duration
	prev := from
	check := func(next time.Time) {
		if next.Sub(prev) > contStill && within(empty, prev, next) == 0 {
			d += next.Sub(prev) - contStill
		}
		prev = next
	}
	i, _ := slices.BinarySearchFunc(all, from, time.Time.Compare)
	for ; i < len(all) && all[i].Before(to); i++ {
		check(all[i])
	}
	check(to)
	return d
}

// within counts the times of ts in [from, to].
func within(ts []time.Time, from, to time.Time) int {
	n := 0
	for _, at := range ts {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

// hostOf is the host of URL u.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func clocks(ts []time.Time) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = clock(t)
	}
	return strings.Join(s, ", ")
}
