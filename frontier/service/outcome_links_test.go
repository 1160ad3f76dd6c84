package service

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestOutcomeLinksWithCrawler crawls a 21-page site with a real crawler
// against a frontier that reads links inside outcomes and against one
// whose lease replies do not say so (a frontier of the release before):
// the crawler embeds a page's links in its outcome and skips links it
// has published before only for the first, and both admit every page.
func TestOutcomeLinksWithCrawler(t *testing.T) {
	t.Parallel()
	const pages = 20
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		for i := range pages {
			fmt.Fprintf(w, `<a href="/p%d">p</a> `, i)
		}
		fmt.Fprint(w, `<a href="/">home</a>`)
	})
	site := httptest.NewServer(mux)
	defer site.Close()

	for _, tc := range []struct {
		name   string
		header bool
	}{{"frontier reads outcome links and has an epoch", true}, {"frontier of the release before", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := bustest.Start(t)
			cfg := svcConfig(t, e)
			var tweaks []func(*Server)
			if !tc.header {
				tweaks = append(tweaks, func(s *Server) { s.replyHeader = func() nats.Header { return nil } })
			}
			h := startServiceWith(t, cfg, bustest.Connect(t, e), nil, Options{AckWait: 2 * time.Second}, tweaks...)
			h.links("", 0, site.URL+"/")

			cc := config.Default().Crawler
			cc.AllowPrivateNetworks = true
			cc.Workers, cc.LeaseBatch = 4, 4
			w, err := fetcher.NewWorker(bustest.Connect(t, e), fetcher.WorkerOptions{Config: cc, Subjects: h.subj, Shards: 1, ID: "test"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			runErr := make(chan error, 1)
			go func() { runErr <- w.Run(ctx) }()
			const want = pages + 1 // the pages and the root (robots.txt is not a page)
			deadline := time.Now().Add(svcWait)
			var st msg.Status
			for st = h.svc.Status(); st.Done < want && time.Now().Before(deadline); st = h.svc.Status() {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-runErr; err != nil {
				t.Fatalf("worker: %v", err)
			}
			st = h.settle()
			if st.Done != want || st.Admitted != pages+1 || st.Queued != 0 {
				t.Fatalf("done %d, admitted %d, queued %d; want %d done, %d admitted, none queued", st.Done, st.Admitted, st.Queued, want, pages+1)
			}
			links := counterValue(t, h.svc.m.messages.WithLabelValues("links"))
			outcomes := counterValue(t, h.svc.m.messages.WithLabelValues("outcome"))
			withLinks := counterValue(t, h.svc.m.messages.WithLabelValues("outcome_links"))
			ws := w.Stats()
			if ws.LinksPublished+ws.LinksSkipped != want*want {
				t.Errorf("worker published %d links and skipped %d, want %d in all", ws.LinksPublished, ws.LinksSkipped, want*want)
			}
			if !tc.header {
				// The seed batch, then per page a link batch and an
				// outcome, and robots.txt's outcome; every link sent.
				if links != 1+want || outcomes != 1+want || withLinks != 0 || ws.LinksSkipped != 0 || ws.LinksInOutcomes != 0 {
					t.Errorf("messages: links %v, outcome %v, outcome_links %v; skipped %d, in outcomes %d; want %d, %d, 0; 0, 0",
						links, outcomes, withLinks, ws.LinksSkipped, ws.LinksInOutcomes, 1+want, 1+want)
				}
				return
			}
			// Only the seed batch travels alone; a page's links ride in its
			// outcome, and the links every page repeats are sent once
			// (the root's) or a few times (pages fetched before it was acked).
			// Outcomes that waited for the same ack went in one batch.
			batched := counterValue(t, h.svc.m.batchedOutcomes)
			if links != 1 || outcomes+withLinks+batched != 1+want || ws.LinksInOutcomes != ws.LinksPublished || ws.LinksSkipped < want*want/2 {
				t.Errorf("messages: links %v, outcome %v, outcome_links %v, outcomes in batches %v; links published %d, in outcomes %d, skipped %d",
					links, outcomes, withLinks, batched, ws.LinksPublished, ws.LinksInOutcomes, ws.LinksSkipped)
			}
		})
	}
}

// TestLeaseReplyEpoch: lease replies carry the frontier's epoch and
// max_links_per_page; the epoch differs for another process on the same
// state file and changes when a seed host is added (links rejected as off
// the seed hosts may be admitted now).
func TestLeaseReplyEpoch(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	h := startService(t, e, cfg)
	send := func(source, url string) { h.links(source, 0, url); h.settle() }
	send("", "http://a.test/")
	epoch := func() string {
		t.Helper()
		b, _ := (&msg.LeaseRequest{Crawler: "test", Max: 0}).MarshalBinary()
		m, err := h.nc.Request(h.subj.Work(), b, svcWait)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := m.Header.Get(msg.HeaderLinksPerPage), fmt.Sprint(cfg.Scope.MaxLinksPerPage); got != want {
			t.Errorf("%s: %q, want %q", msg.HeaderLinksPerPage, got, want)
		}
		return m.Header.Get(msg.HeaderEpoch)
	}
	e1 := epoch()
	if !strings.HasPrefix(e1, h.st.CrawlID()+"-") {
		t.Fatalf("epoch %q does not start with the crawl ID %q", e1, h.st.CrawlID())
	}
	send("http://a.test/", "http://b.test/") // off the seed hosts: rejected
	if e := epoch(); e != e1 {
		t.Errorf("epoch changed from %q to %q without a seed host added", e1, e)
	}
	send("", "http://b.test/")
	e2 := epoch()
	if e2 == e1 {
		t.Errorf("epoch %q unchanged after a seed host was added", e2)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h = startService(t, e, cfg)
	if e3 := epoch(); e3 == e2 || e3 == e1 {
		t.Errorf("a restarted frontier on the same file kept the epoch %q", e3)
	}
}

// TestServiceOutcomeBatch: lease replies say the frontier reads outcome
// batches; a batch's outcomes (robots, pages, one with its links) are
// applied as if sent one by one, and counted as batched.
func TestServiceOutcomeBatch(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	h := startService(t, e, svcConfig(t, e))
	h.links("", 0, "http://a.test/", "http://b.test/", "http://c.test/")
	h.settle()
	b, _ := (&msg.LeaseRequest{Crawler: "test", Max: 0}).MarshalBinary()
	m, err := h.nc.Request(h.subj.Work(), b, svcWait)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get(msg.HeaderOutcomeBatch) != "1" {
		t.Fatalf("lease reply headers %v: no %s", m.Header, msg.HeaderOutcomeBatch)
	}
	if m.Header.Get(msg.HeaderOutcomeV5) != "" {
		t.Errorf("a once-mode frontier's lease reply asks for version 5 outcomes: %v", m.Header)
	}
	report := func(outs ...*msg.Outcome) {
		t.Helper()
		data, err := (&msg.OutcomeBatch{Outcomes: outs}).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		h.publish(h.subj.Done(0), data)
		h.settle()
	}
	var outs []*msg.Outcome
	for _, l := range h.leaseUntil(10, 3) {
		outs = append(outs, &msg.Outcome{LeaseID: l.ID, URL: l.URL, Robots: true, Status: 404, FetchedAt: time.Now()})
	}
	report(outs...)
	outs = nil
	for _, l := range h.leaseUntil(10, 3) {
		o := &msg.Outcome{LeaseID: l.ID, URL: l.URL, Status: 200, FetchedAt: time.Now()}
		if l.URL == "http://a.test/" {
			o.Links = &msg.LinkBatch{Source: l.URL, Depth: l.Depth, Links: []msg.Link{{URL: "http://a.test/x", Kind: 1}, {URL: "http://b.test/", Kind: 1}}}
		}
		outs = append(outs, o)
	}
	report(outs...)
	st := h.settle()
	if st.Done != 3 || st.Admitted != 4 || st.Duplicates != 1 || st.Queued != 1 || st.Leased != 0 {
		t.Fatalf("after two batches: %+v\nwant done 3, admitted 4, duplicates 1, queued 1, leased 0", st)
	}
	if got := counterValue(t, h.svc.m.messages.WithLabelValues("outcome_batch")); got != 2 {
		t.Errorf("outcome_batch messages %v, want 2", got)
	}
	if got := counterValue(t, h.svc.m.batchedOutcomes); got != 6 {
		t.Errorf("batched outcomes %v, want 6", got)
	}
	if got := counterValue(t, h.svc.m.messages.WithLabelValues("outcome")) + counterValue(t, h.svc.m.messages.WithLabelValues("outcome_links")); got != 0 {
		t.Errorf("%v outcomes counted as single messages, want 0", got)
	}
}
