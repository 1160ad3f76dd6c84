package frontier

import (
	"context"
	"testing"
	"time"

	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestRestartTakesUnackedAtOnce: a frontier killed while it held pulled
// but unacknowledged messages must not leave them to JetStream's AckWait.
// The killed frontier is played by a raw pull on its durable consumer that
// never acks; the AckWait is an hour, so only a restart that takes them at
// once can lease their URL within svcWait. It logs the time from the
// restart to the first lease:
//
//	go test ./frontier -run TestRestartTakesUnackedAtOnce -v
func TestRestartTakesUnackedAtOnce(t *testing.T) {
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	opts := ServiceOptions{AckWait: time.Hour}
	nc := bustest.Connect(t, e)
	h := startServiceWith(t, cfg, nc, nil, opts)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// The "killed" frontier: pulls the shard's message and dies with it.
	h.links("", 0, "http://a.test/1")
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	cons, err := h.js.Consumer(ctx, cfg.NATS.Stream, ConsumerName(0))
	if err != nil {
		t.Fatal(err)
	}
	n := 0 // the consumer may see the message a moment after its publish
	for deadline := time.Now().Add(svcWait); n == 0 && time.Now().Before(deadline); {
		batch, err := cons.FetchNoWait(10)
		if err != nil {
			t.Fatal(err)
		}
		for range batch.Messages() {
			n++
		}
		if n == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if n != 1 {
		t.Fatalf("the killed frontier pulled %d messages, want 1", n)
	}
	if info, err := cons.Info(ctx); err != nil || info.NumAckPending != 1 {
		t.Fatalf("consumer info %+v, %v: want 1 ack pending", info, err)
	}

	start := time.Now()
	h2 := startServiceWith(t, cfg, nc, nil, opts)
	var got []msg.Lease
	for time.Since(start) < svcWait && len(got) == 0 {
		got = h2.lease(10)
		if len(got) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	took := time.Since(start)
	if len(got) == 0 {
		t.Fatalf("no lease %v after the restart: the unacked message waits for AckWait (%v)", took, opts.AckWait)
	}
	t.Logf("restart to first lease: %v (AckWait %v)", took, opts.AckWait)
	if got[0].URL != "http://a.test/robots.txt" {
		t.Errorf("first lease %s, want the host's robots.txt", got[0].URL)
	}
	if st := h2.settle(); st.Admitted != 1 || st.LinksReceived != 1 {
		t.Errorf("after the restart admitted %d of %d links, want 1 of 1", st.Admitted, st.LinksReceived)
	}
}

// TestApplyTwiceIsIdempotent is the claim takeOver rests on: applying
// every message of a batch a second time (a redelivery after a restart,
// the file reopened in between) changes nothing but the duplicate and
// stale counts.
func TestApplyTwiceIsIdempotent(t *testing.T) {
	h := newHarness(t, nil)
	h.seed("http://a.test/1", "http://a.test/2")
	robots := h.lease(10)
	if len(robots) != 1 || !robots[0].Robots {
		t.Fatalf("leases %+v, want one robots lease", robots)
	}
	h.apply(nil, outcome(robots[0], 404))
	h.clock.Advance(time.Minute) // politeness
	page := h.lease(10)
	if len(page) != 1 {
		t.Fatalf("leases %+v, want one page lease", page)
	}
	batch := []*msg.LinkBatch{links("http://a.test/1", 1, "http://a.test/3", "http://a.test/4")}
	done := outcome(page[0], 200)
	first := h.apply(batch, done)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	before := h.s.Status()
	h.reopen()
	again := h.apply(batch, done)
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	after := h.s.Status()
	if first.Admitted != 2 || again.Admitted != 0 || again.Duplicates != 2 || again.Outcomes != 0 || again.Stale != 1 {
		t.Errorf("first apply %+v, second %+v: want 2 admitted, then 2 duplicates and 1 stale outcome", first, again)
	}
	if after.Admitted != before.Admitted || after.Queued != before.Queued || after.Done != before.Done || after.Leased != before.Leased {
		t.Errorf("after the repeat admitted/queued/done/leased %d/%d/%d/%d, before %d/%d/%d/%d",
			after.Admitted, after.Queued, after.Done, after.Leased, before.Admitted, before.Queued, before.Done, before.Leased)
	}
}
