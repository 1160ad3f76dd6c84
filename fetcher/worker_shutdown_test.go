package fetcher

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

// TestWorkerRetriesPublish: the stream does not exist while the worker
// fetches, so every publish fails; once the stream appears, everything
// arrives and nothing was dropped.
func TestWorkerRetriesPublish(t *testing.T) {
	site, _ := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<a href="/next%s">n</a>`, r.URL.Path)
	}))
	e := bustest.Start(t)
	natsCfg := config.Default().NATS
	fnc := bustest.Connect(t, e)
	front := &fakeFrontier{t: t, subj: msg.NewSubjects(natsCfg.Prefix)}
	sub, err := fnc.Subscribe(front.subj.Work(), front.serve)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	const n = 5
	for i := 1; i <= n; i++ {
		front.add(0, msg.Lease{ID: uint64(i), URL: fmt.Sprintf("%s/p%d", site.URL, i), Deadline: time.Now().Add(time.Minute)})
	}
	cfg := workerConfig(t.TempDir())
	cfg.Workers = 2 * n // every lease in flight at once
	w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: cfg, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	cancel, wait := runWorker(w)

	// Wait until all leases are taken and publishes have failed.
	for w.Stats().PublishRetries < n || w.Stats().Leases < n {
		time.Sleep(20 * time.Millisecond)
	}
	if got := w.Stats().Outcomes; got != 0 {
		t.Fatalf("%d outcomes published without a stream", got)
	}
	js, _ := jetstream.New(fnc)
	stream, err := bus.EnsureStream(context.Background(), js, natsCfg)
	if err != nil {
		t.Fatal(err)
	}
	front.cons, err = stream.CreateOrUpdateConsumer(context.Background(), jetstream.ConsumerConfig{Durable: "late", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	got := front.collect(n, 30*time.Second)
	cancel()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var outcomes, batches int
	for _, r := range got {
		if r.outcome != nil {
			outcomes++
		}
		if r.batch != nil {
			batches++
		}
	}
	if outcomes != n || batches != n {
		t.Errorf("after the stream appeared: %d outcomes and %d link batches, want %d each", outcomes, batches, n)
	}
}

// TestWorkerShutdown: a fetch in flight when ctx ends is finished and its
// outcome published before Run returns; no lease is requested after.
func TestWorkerShutdown(t *testing.T) {
	started := make(chan struct{}, 1)
	site, _ := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		time.Sleep(300 * time.Millisecond)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<a href="/after">a</a>`)
	}))
	e := bustest.Start(t)
	natsCfg := config.Default().NATS
	front := startFrontier(t, bustest.Connect(t, e), natsCfg)
	front.add(0, msg.Lease{ID: 42, URL: site.URL + "/slow", Deadline: time.Now().Add(time.Minute)})
	w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: workerConfig(t.TempDir()), Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	cancel, wait := runWorker(w)
	<-started
	cancel()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	front.mu.Lock()
	askedAtStop := len(front.asked)
	front.mu.Unlock()
	got := front.collect(1, 5*time.Second)
	if len(got) != 2 || got[1].outcome == nil || got[1].outcome.LeaseID != 42 || got[1].outcome.Status != 200 || got[0].batch == nil {
		t.Fatalf("after shutdown the stream holds %+v, want the page's link batch and its outcome", got)
	}
	time.Sleep(100 * time.Millisecond)
	front.mu.Lock()
	defer front.mu.Unlock()
	if len(front.asked) != askedAtStop {
		t.Errorf("lease requests after Run returned")
	}
}

// TestWorkerFetchesLateReplyAtShutdown: a lease request times out, the
// worker stops, and only then does the frontier answer it with a lease.
// The worker fetches that lease and reports it rather than leave it to
// expire.
func TestWorkerFetchesLateReplyAtShutdown(t *testing.T) {
	site, hits := testsite.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<p>late</p>`)
	}))
	e := bustest.Start(t)
	natsCfg := config.Default().NATS
	front := startFrontier(t, bustest.Connect(t, e), natsCfg)
	held := make(chan *nats.Msg, 1)
	requests := make(chan struct{}, 100)
	n := 0 // requests seen; the callback runs on one goroutine
	front.mu.Lock()
	front.hold = func(m *nats.Msg) bool {
		n++
		select {
		case requests <- struct{}{}:
		default:
		}
		if n == 1 {
			held <- m // the first request: unanswered for now
			return true
		}
		return false // the others: answered empty at once
	}
	front.mu.Unlock()
	cfg := workerConfig(t.TempDir())
	cfg.Workers, cfg.LeaseBatch = 1, 1
	w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: cfg, Subjects: msg.NewSubjects(natsCfg.Prefix), Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	cancel, wait := runWorker(w)
	first := <-held
	<-requests
	<-requests // a second request: the first one timed out
	cancel()
	time.Sleep(50 * time.Millisecond) // the loop sees ctx end in its back-off
	reply := msg.LeaseReply{Shard: 0, Leases: []msg.Lease{{ID: 7, URL: site.URL + "/late", Deadline: time.Now().Add(time.Minute)}}}
	data, _ := reply.MarshalBinary()
	if err := first.Respond(data); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := front.collect(1, 5*time.Second)
	var outcome *msg.Outcome
	for _, r := range got {
		if r.outcome != nil {
			outcome = r.outcome
		}
	}
	if outcome == nil || outcome.LeaseID != 7 || outcome.Status != 200 || hits.Hits() != 1 {
		t.Fatalf("after shutdown: outcome %+v, site hit %d times; want lease 7 fetched once", outcome, hits.Hits())
	}
}
