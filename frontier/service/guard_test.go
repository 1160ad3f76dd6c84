package service

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestGuardBlockedIsPermanent: a crawler whose private network guard is on
// (crawler.allow_private_networks false) is leased a seed host on
// loopback. The guard refuses the host's robots.txt without a connection;
// the frontier takes that as permanent and finishes both queued URLs of
// the host as failed after that one attempt. Before, it was a transient
// failure: the robots.txt was tried 1 + max_retries = 4 times, then the
// URLs were given up as robots-unavailable.
func TestGuardBlockedIsPermanent(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>private"))
	}))
	defer site.Close()

	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	cfg.Politeness.BackoffBase = 10 * time.Millisecond // a retry, if any, comes at once
	h := startService(t, e, cfg)
	h.links("", 0, site.URL+"/", site.URL+"/a")

	cc := config.Default().Crawler // the guard is on
	cc.Workers, cc.LeaseBatch = 2, 2
	w, err := fetcher.NewWorker(bustest.Connect(t, e), fetcher.WorkerOptions{Config: cc, Subjects: h.subj, Shards: 1, ID: "guarded"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	var st msg.Status
	for deadline := time.Now().Add(svcWait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st = h.svc.Status(); st.Done == 2 {
			break
		}
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatalf("worker: %v", err)
	}
	st = h.settle()
	ws := w.Stats()
	if st.Done != 2 || st.Finished["failed"] != 2 || ws.Fetched != 1 || ws.NoStatus != 1 || requests.Load() != 0 {
		t.Fatalf("done %d, finished %v, fetch attempts %d (%d without a response), requests that reached the host %d; want 2 done, 2 failed, 1 attempt without a response, none reached",
			st.Done, st.Finished, ws.Fetched, ws.NoStatus, requests.Load())
	}
}
