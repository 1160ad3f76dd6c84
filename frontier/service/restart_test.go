package service

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
	t.Parallel()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	opts := Options{AckWait: time.Hour}
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
