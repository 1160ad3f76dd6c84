package service

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// TestForgedOutcomesChangeNothing: NATS permissions cannot tie an outcome
// to the lease its publisher holds, so a client with the crawler's user
// may publish outcomes on any shard's done subject. The frontier applies
// an outcome only when its shard, lease ID and URL match a live lease:
// outcomes for a lease the forger does not know (guessed IDs around the
// live one, the live ID with another URL, the live ID and URL for another
// shard, a release of an unknown lease) change no queue, lease or finished
// count; they are counted stale, or dead-lettered when malformed. The
// holder's own outcome is then applied.
func TestForgedOutcomesChangeNothing(t *testing.T) {
	t.Parallel()
	e, _ := bustest.StartWithUsers(t)
	cfg := svcConfig(t, e)
	cfg.Frontier.LeaseTimeout = time.Minute // the live lease must not expire during the test
	holder := bustest.ConnectAs(t, e, bus.RoleCrawler)
	front := bustest.ConnectAs(t, e, bus.RoleFrontier)
	h := startServiceWith(t, cfg, holder, front, Options{AckWait: 2 * time.Second})

	h.links("", 0, "http://a.test/", "http://b.test/")
	h.settle()
	h.settle()
	pages := h.crawlRobots(h.leaseUntil(10, 2))
	h.settle()
	pages = append(pages, h.leaseUntil(10, 2-len(pages))...)
	live := pages[0]
	before := h.settle()
	if before.Leased != 1 && before.Leased != 2 {
		t.Fatalf("before the forgeries: %d leased", before.Leased)
	}

	forger := bustest.ConnectAs(t, e, bus.RoleCrawler)
	js, err := jetstream.New(forger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	var forged []msg.Outcome
	for d := uint64(1); d <= 20; d++ {
		forged = append(forged,
			msg.Outcome{LeaseID: live.ID + d, URL: live.URL, Status: 200},
			msg.Outcome{LeaseID: live.ID - d, URL: live.URL, Status: 200})
	}
	forged = append(forged,
		msg.Outcome{LeaseID: live.ID, URL: live.URL + "other", Status: 200},
		msg.Outcome{LeaseID: live.ID, URL: live.URL, Status: 200, Shard: 1},
		msg.Outcome{LeaseID: live.ID + 100, URL: live.URL, Release: msg.ReleaseCancelled})
	for _, o := range forged {
		if o.FetchedAt.IsZero() {
			o.FetchedAt = time.Now()
		}
		b, err := o.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, h.subj.Done(0), b); err != nil {
			t.Fatalf("the crawler's user publishing an outcome: %v", err)
		}
	}
	after := h.settle()
	if after.Queued != before.Queued || after.Leased != before.Leased || after.Done != before.Done || !maps.Equal(after.Finished, before.Finished) {
		t.Errorf("forged outcomes changed the crawl: queued %d→%d leased %d→%d done %d→%d finished %v→%v",
			before.Queued, after.Queued, before.Leased, after.Leased, before.Done, after.Done, before.Finished, after.Finished)
	}
	// The one that names another shard than its subject's is malformed:
	// dead-lettered; the others are counted stale.
	if got := after.Outcomes["stale"] - before.Outcomes["stale"]; got != uint64(len(forged)-1) {
		t.Errorf("%d forged outcomes counted stale, want %d", got, len(forged)-1)
	}
	fjs, _ := jetstream.New(front)
	str, err := fjs.Stream(ctx, "TRAWL")
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx, jetstream.WithSubjectFilter(h.subj.Dead(0)))
	if err != nil {
		t.Fatal(err)
	}
	if dead := info.State.Subjects[h.subj.Dead(0)]; dead != 1 {
		t.Errorf("%d forged outcomes dead-lettered, want 1 (the other shard's)", dead)
	}

	h.report(msg.Outcome{LeaseID: live.ID, URL: live.URL, Status: 200})
	final := h.settle()
	if final.Done != before.Done+1 || final.Leased != before.Leased-1 {
		t.Errorf("the holder's outcome: done %d→%d leased %d→%d, want one more done, one fewer leased", before.Done, final.Done, before.Leased, final.Leased)
	}
	t.Logf("%d forged outcomes: queued %d leased %d done %d unchanged; %d stale", len(forged), after.Queued, after.Leased, after.Done, after.Outcomes["stale"]-before.Outcomes["stale"])
}
