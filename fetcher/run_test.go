package fetcher

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestRunLearnsTheShardCount: a crawler process whose configuration does
// not give frontier.shards asks the frontiers, then leases; a ctx that
// ends stops it cleanly.
func TestRunLearnsTheShardCount(t *testing.T) {
	e := bustest.Start(t)
	nc := bustest.Connect(t, e)
	cfg := config.Default()
	cfg.Crawler = testConfig()
	subj := msg.NewSubjects(cfg.NATS.Prefix)
	status, _ := msg.MarshalStatus(&msg.Status{Shard: 1, Shards: 3})
	if _, err := nc.Subscribe(subj.Status(), func(m *nats.Msg) { _ = m.Respond(status) }); err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	if _, err := nc.Subscribe(subj.Work(), func(m *nats.Msg) {
		_ = m.Respond(nil) // nothing to lease
		select {
		case asked <- struct{}{}:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, nc, RunOptions{ID: "run-test"}) }()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("Run returned before leasing: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no lease request within 10 s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestRunWaitsForAFrontier: with no frontier to say the shard count, Run
// waits; its ctx ending is not an error.
func TestRunWaitsForAFrontier(t *testing.T) {
	e := bustest.Start(t)
	nc := bustest.Connect(t, e)
	cfg := config.Default()
	cfg.Crawler = testConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := Run(ctx, cfg, nc, RunOptions{}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run took %v after its ctx ended", d)
	}
}
