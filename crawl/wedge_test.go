package crawl

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/synthweb"
)

// TestRunEndsWithAnUndeliverableMessage: a message of 8 MiB - 64 B (under
// the embedded server's max_payload, but too large to copy whole to the
// dead subject with its headers) waits on the shard's links subject when
// the crawl starts. The crawl still fetches every page and ends by
// itself, and a second run on the same data dir ends too.
func TestRunEndsWithAnUndeliverableMessage(t *testing.T) {
	web := startWeb(t, 3, 20, 0)
	dir := t.TempDir()
	cfg := testConfig(t, web, dir)

	// The message, put in the data dir's stream before the crawl starts.
	emb, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := emb.Connect(context.Background(), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	if _, err := bus.EnsureStream(pctx, js, cfg.NATS); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(pctx, msg.NewSubjects(cfg.NATS.Prefix).Links(0), bytes.Repeat([]byte{0xee}, msg.MaxMessage-64)); err != nil {
		t.Fatal(err)
	}
	pcancel()
	nc.Close()
	emb.Close()

	// Bound: a crawl of 60 pages takes seconds; past it, one that does
	// not end is reported as interrupted.
	const bound = 45 * time.Second
	opts := Options{Config: cfg, Frontier: service.Options{AckWait: 2 * time.Second}}
	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		start := time.Now()
		sum, err := Run(ctx, opts)
		cancel()
		t.Logf("run %d: %s after %v, fetched %d, frontier queued %d leased %d backlog %d decode errors %d",
			run, sum.StopReason, time.Since(start).Round(time.Millisecond), sum.Fetched,
			sum.Frontier.Queued, sum.Frontier.Leased, sum.Frontier.Pending, sum.Frontier.DecodeErrors)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if sum.StopReason != StopDone {
			t.Fatalf("run %d: stop reason %q, want %q (backlog %d)", run, sum.StopReason, StopDone, sum.Frontier.Pending)
		}
		if run == 1 {
			rep := web.Report(synthweb.ReportOptions{})
			if rep.Fetched != rep.Want || rep.Want == 0 {
				t.Fatalf("fetched %d of %d reachable pages", rep.Fetched, rep.Want)
			}
			if sum.Frontier.DecodeErrors != 1 {
				t.Errorf("decode errors %d, want 1", sum.Frontier.DecodeErrors)
			}
		}
	}
}
