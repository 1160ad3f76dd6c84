package main

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
	"github.com/trawlhq/trawl/parser"
)

func TestSeedCommand(t *testing.T) {
	e := bustest.Start(t)
	nc := bustest.Connect(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js, _ := jetstream.New(nc)
	cfg := config.Default().NATS
	stream, err := bus.EnsureStream(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Two frontiers answer status: the command learns there are 2 shards.
	st := msg.Status{Shards: 2}
	b, _ := msg.MarshalStatus(&st)
	if _, err := nc.Subscribe("trawl.status", func(m *nats.Msg) { _ = m.Respond(b) }); err != nil {
		t.Fatal(err)
	}
	nc.Flush()

	// The seeds go where the frontiers' router sends them: by host after
	// scope.canonical (here "www", which changes the host).
	t.Setenv("TRAWL_SCOPE_CANONICAL", "www")
	seeds := []string{"https://a.example/", "https://A.example/x", "http://b.example/", "http://www.c.example/", "http://www.d.example/"}
	// A seed that can never be crawled: all are refused, none published.
	var out, errb bytes.Buffer
	code := seedCmd(append([]string{"--nats", e.ClientURL(), "--file", "-"}, "mailto:x@y"), strings.NewReader(strings.Join(seeds, "\n")+"\n# comment\n"), &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), `"mailto:x@y": parser: not an http(s) url`) || out.Len() != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code = seedCmd([]string{"--nats", e.ClientURL(), "--file", "-"}, strings.NewReader(strings.Join(seeds, "\n")+"\n# comment\n"), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "published 5 seed(s) to 2 shard(s)") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}

	cons, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.FetchNoWait(10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for m := range batch.Messages() {
		var lb msg.LinkBatch
		if err := lb.UnmarshalBinary(m.Data()); err != nil {
			t.Fatal(err)
		}
		if lb.Source != "" || lb.Depth != 0 {
			t.Errorf("seed batch with source %q depth %d", lb.Source, lb.Depth)
		}
		for _, l := range lb.Links {
			got[m.Subject()] = append(got[m.Subject()], l.URL)
		}
	}
	want := map[string][]string{}
	for _, s := range seeds {
		_, shard, _ := msg.Router{Shards: 2, Rules: parser.DropWWW}.Route(s)
		subj := msg.NewSubjects("").Links(shard)
		want[subj] = append(want[subj], s)
	}
	for subj := range want {
		sort.Strings(want[subj])
		sort.Strings(got[subj])
		if strings.Join(got[subj], " ") != strings.Join(want[subj], " ") {
			t.Errorf("%s: got %v, want %v", subj, got[subj], want[subj])
		}
	}
	if len(got) != len(want) {
		t.Errorf("subjects %v, want %v", got, want)
	}
}

func TestSeedCommandNoFrontier(t *testing.T) {
	e := bustest.Start(t)
	var out, errb bytes.Buffer
	if code := seedCmd([]string{"--nats", e.ClientURL(), "--ask-timeout", "300ms", "https://a.example/"}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no frontier answered") || !strings.Contains(errb.String(), "--shards") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
