package service

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestOutcomeLinksWithCrawler crawls a 21-page site with a real crawler
// against a frontier that reads links inside outcomes and against one
// whose lease replies do not say so (a frontier of the release before):
// the crawler embeds a page's links in its outcome only for the first,
// and both admit every page.
func TestOutcomeLinksWithCrawler(t *testing.T) {
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
	}{{"frontier reads outcome links", true}, {"frontier of the release before", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := bustest.Start(t)
			cfg := svcConfig(t, e)
			var tweaks []func(*Server)
			if !tc.header {
				tweaks = append(tweaks, func(s *Server) { s.replyHeader = nil })
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
			// The seed batch, then per page either a link batch and an
			// outcome or an outcome with links; robots.txt has none.
			wantLinks, wantOutcomes, wantWith := float64(1+want), float64(1+want), 0.0
			if tc.header {
				wantLinks, wantOutcomes, wantWith = 1, 1, pages+1
			}
			if links != wantLinks || outcomes != wantOutcomes || withLinks != wantWith {
				t.Errorf("messages: links %v, outcome %v, outcome_links %v; want %v, %v, %v", links, outcomes, withLinks, wantLinks, wantOutcomes, wantWith)
			}
			if ws := w.Stats(); ws.LinksPublished != (pages+1)*(pages+1) || (ws.LinksInOutcomes == ws.LinksPublished) != tc.header {
				t.Errorf("worker published %d links, %d in outcomes", ws.LinksPublished, ws.LinksInOutcomes)
			}
		})
	}
}
