package frontierclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/frontierclient"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// answerStatus makes nc answer status requests as a frontier of a crawl
// of shards shards does.
func answerStatus(t *testing.T, nc *nats.Conn, subj msg.Subjects, shards int) {
	t.Helper()
	b, err := msg.MarshalStatus(&msg.Status{Shard: shards - 1, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe(subj.Status(), func(m *nats.Msg) { _ = m.Respond(b) }); err != nil {
		t.Fatal(err)
	}
}

// newClient starts an embedded NATS and returns a connection to it, the
// default subjects and a Client on them.
func newClient(t *testing.T) (*nats.Conn, msg.Subjects, *frontierclient.Client) {
	t.Helper()
	nc := bustest.Connect(t, bustest.Start(t))
	subj := msg.NewSubjects("")
	c, err := frontierclient.New(nc, subj)
	if err != nil {
		t.Fatal(err)
	}
	return nc, subj, c
}

func TestShards(t *testing.T) {
	nc, subj, c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Shards(ctx); !errors.Is(err, frontierclient.ErrNoFrontier) {
		t.Fatalf("no frontier: err = %v", err)
	}
	answerStatus(t, nc, subj, 2)
	if n, err := c.Shards(context.Background()); err != nil || n != 2 {
		t.Fatalf("Shards = %d, %v; want 2", n, err)
	}
}

func TestShardsWaitsForAStartingFrontier(t *testing.T) {
	nc, subj, c := newClient(t)
	go func() {
		time.Sleep(300 * time.Millisecond) // the frontier subscribes late
		answerStatus(t, nc, subj, 2)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, err := c.Shards(ctx); err != nil || n != 2 {
		t.Fatalf("Shards = %d, %v; want 2 once the frontier answers", n, err)
	}
}

// TestPublishSeeds: each seed reaches the links subject of the shard the
// router names, as a batch with an empty source; invalid ones are
// reported, not sent.
func TestPublishSeeds(t *testing.T) {
	nc, subj, c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SEEDTEST", Subjects: []string{subj.Links(0), subj.Links(1), subj.Links(2)}})
	if err != nil {
		t.Fatal(err)
	}
	rt := msg.Router{Shards: 3}
	seeds := []string{"http://a.example/", "https://b.example/x", "http://c.example/", "mailto:x@example.com"}
	res, err := c.PublishSeeds(ctx, rt, seeds)
	if err != nil {
		t.Fatal(err)
	}
	if res.Published != 3 || len(res.Invalid) != 1 || res.Invalid["mailto:x@example.com"] == nil {
		t.Fatalf("result %+v, want 3 published and the mailto: URL invalid", res)
	}
	got := map[string]int{}
	for shard := range 3 {
		m, err := stream.GetLastMsgForSubject(ctx, subj.Links(shard))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var b msg.LinkBatch
		if err := b.UnmarshalBinary(m.Data); err != nil {
			t.Fatal(err)
		}
		if b.Source != "" {
			t.Errorf("shard %d: source %q, want none (seeds)", shard, b.Source)
		}
		for _, l := range b.Links {
			got[l.URL] = shard
		}
	}
	for _, s := range seeds[:3] {
		_, want, _ := rt.Route(s)
		if shard, ok := got[s]; !ok || shard != want {
			t.Errorf("%s: on shard %d (found %v), want %d", s, shard, ok, want)
		}
	}
}
