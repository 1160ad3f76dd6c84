package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

func TestStatusCommand(t *testing.T) {
	e := bustest.Start(t)
	nc := bustest.Connect(t, e)
	for shard := 0; shard < 2; shard++ {
		s := msg.Status{Shard: shard, Shards: 2, Queued: 7, Done: 11, Admitted: 20,
			Filter: msg.FilterStatus{Capacity: 100, TargetFP: 0.01},
			Audit:  msg.AuditStatus{Fraction: 1, SampledNew: 19, FPSkips: 1}}
		b, _ := msg.MarshalStatus(&s)
		if _, err := nc.Subscribe("trawl.status", func(m *nats.Msg) { _ = m.Respond(b) }); err != nil {
			t.Fatal(err)
		}
	}
	nc.Flush()

	var out, errb bytes.Buffer
	if code := statusCmd([]string{"--nats", e.ClientURL(), "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Total  msg.Status
		Shards []msg.Status
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Total.Queued != 14 || got.Total.Done != 22 || len(got.Shards) != 2 || got.Total.Audit.FPSkips != 2 || got.Total.Audit.Rate != 0.05 {
		t.Errorf("status --json total %+v", got.Total)
	}

	out.Reset()
	if code := statusCmd([]string{"--nats", e.ClientURL()}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"queued", "14", "fp skip rate", "5.0000%", "shard"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text status lacks %q:\n%s", want, out.String())
		}
	}

	errb.Reset()
	if code := statusCmd([]string{"--nats", e.ClientURL(), "--shards", "3", "--timeout", "300ms"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "[2]") {
		t.Errorf("a missing shard: exit %d, stderr %q; want 1 naming shard 2", code, errb.String())
	}
}

// TestStatusAsTheFrontierUser: `frontier status` with the frontier's user
// in the URL works on a server with trawl's users, and its replies come to
// the frontier's own inboxes (the only ones that user may subscribe to).
func TestStatusAsTheFrontierUser(t *testing.T) {
	e, users := bustest.StartWithUsers(t)
	nc := bustest.ConnectAs(t, e, bus.RoleFrontier)
	s := msg.Status{Shard: 0, Shards: 1, Queued: 3}
	b, _ := msg.MarshalStatus(&s)
	if _, err := nc.Subscribe("trawl.status", func(m *nats.Msg) { _ = m.Respond(b) }); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	url := strings.Replace(e.ClientURL(), "nats://", "nats://frontier:"+users[bus.RoleFrontier]+"@", 1)
	var out, errb bytes.Buffer
	if code := statusCmd([]string{"--nats", url, "--json"}, &out, &errb); code != 0 || !strings.Contains(out.String(), `"queued": 3`) {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	if code := statusCmd([]string{"--nats", e.ClientURL(), "--json"}, &out, &errb); code == 0 {
		t.Errorf("status without credentials: exit 0")
	}
}
