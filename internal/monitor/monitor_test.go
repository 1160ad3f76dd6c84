package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

func shardStatus(shard int) msg.Status {
	s := msg.Status{
		Shard: shard, Shards: 2, Queued: int64(10 * (shard + 1)), Leased: 1, Done: 100, Hosts: 3,
		LinksReceived: 1000, Admitted: 200, Duplicates: 800, Rejected: map[string]uint64{"depth": 5},
		Outcomes: map[string]uint64{"2xx": 90, "4xx": 10},
		Finished: map[string]uint64{"fetched": 90, "rate_limited": 4, "host_gave_up": 6}, HostsGivenUp: 1, HostsBackingOff: 2,
		Filter:   msg.FilterStatus{Capacity: 1000, TargetFP: 0.01, Items: 200, Fill: 0.1 * float64(shard+1), ImpliedFP: 0.001},
		Audit:    msg.AuditStatus{Fraction: 0.5, SampledNew: 99, FPSkips: 1},
		TopHosts: []msg.HostStatus{{Host: "h" + string(rune('0'+shard)) + ".test", Queued: int64(10 * (shard + 1))}},
	}
	s.Audit.Estimate(s.Admitted)
	return s
}

func TestTotal(t *testing.T) {
	tot := Total([]msg.Status{shardStatus(0), shardStatus(1)})
	if tot.Queued != 30 || tot.Done != 200 || tot.Admitted != 400 || tot.Rejected["depth"] != 10 || tot.Outcomes["2xx"] != 180 ||
		tot.Finished["rate_limited"] != 8 || tot.HostsGivenUp != 2 || tot.HostsBackingOff != 4 {
		t.Errorf("sums wrong: %+v", tot)
	}
	if d := tot.Filter.Fill - 0.15; d > 1e-12 || d < -1e-12 {
		t.Errorf("fill = %v, want the capacity-weighted mean 0.15", tot.Filter.Fill)
	}
	if tot.Audit.SampledNew != 198 || tot.Audit.FPSkips != 2 || tot.Audit.Rate != 0.01 {
		t.Errorf("audit not recomputed from sums: %+v", tot.Audit)
	}
	if len(tot.TopHosts) != 2 || tot.TopHosts[0].Host != "h1.test" {
		t.Errorf("top hosts not merged by queue depth: %+v", tot.TopHosts)
	}
}

func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(func() msg.Status { return shardStatus(0) }))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeListener(ctx, ln, func() []msg.Status { return []msg.Status{shardStatus(0), shardStatus(1)} }, reg, nil)
	}()
	base := "http://" + ln.Addr().String()
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	metrics := get("/metrics")
	for _, want := range []string{
		`trawl_frontier_queue_depth{shard="0"} 10`,
		`trawl_frontier_rejected_total{reason="depth",shard="0"} 5`,
		`trawl_frontier_outcomes_total{class="2xx",shard="0"} 90`,
		`trawl_frontier_audit_fp_skip_rate{shard="0"} 0.01`,
		`trawl_frontier_urls_finished_total{reason="rate_limited",shard="0"} 4`,
		`trawl_frontier_hosts_given_up_total{shard="0"} 1`,
		`trawl_frontier_hosts_backing_off{shard="0"} 2`,
		`trawl_frontier_filter_target_fp{shard="0"} 0.01`,
		`trawl_frontier_filter_fp_warning{shard="0"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The history takes its first point when the server starts.
	var js struct {
		Total   msg.Status
		Shards  []msg.Status
		History struct {
			IntervalSeconds float64 `json:"interval_seconds"`
			Points          []Point
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := json.Unmarshal([]byte(get("/status.json")), &js); err != nil {
			t.Fatal(err)
		}
		if len(js.History.Points) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if js.Total.Queued != 30 || len(js.Shards) != 2 || js.History.IntervalSeconds != 5 || len(js.History.Points) != 1 || js.History.Points[0].Queued != 30 {
		t.Errorf("/status.json: %+v", js)
	}
	html := get("/")
	if n := strings.Count(html, `<polyline class="series"`); n < 6 {
		t.Errorf("status page has %d chart series", n)
	}
	for _, want := range []string{"Busiest hosts", "h1.test", "2 shard(s) answering", "1.000%", "finished: rate_limited", "hosts given up (429/503)"} {
		if !strings.Contains(html, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeListener returned %v after cancel", err)
	}
}

func TestGather(t *testing.T) {
	e := bustest.Start(t)
	nc := bustest.Connect(t, e)
	subj := msg.NewSubjects("")
	answer := func(shard int) {
		_, err := nc.Subscribe(subj.Status(), func(m *nats.Msg) {
			s := shardStatus(shard)
			b, _ := msg.MarshalStatus(&s)
			_ = m.Respond(b)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	answer(1)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	got, err := Gather(ctx, nc, subj, 2)
	if !errors.Is(err, ErrMissingShards) || !strings.Contains(err.Error(), "[0]") || len(got) != 1 || got[0].Shard != 1 {
		t.Fatalf("one of two shards: got %d statuses, err %v", len(got), err)
	}
	answer(0)
	got, err = Gather(context.Background(), nc, subj, 2)
	if err != nil || len(got) != 2 || got[0].Shard != 0 || got[1].Shard != 1 {
		t.Fatalf("both shards: %v, %+v", err, got)
	}
	got, err = Gather(context.Background(), nc, subj, 0) // learn the count from the answers
	if err != nil || len(got) != 2 {
		t.Fatalf("unknown shard count: %v, %d statuses", err, len(got))
	}
}
