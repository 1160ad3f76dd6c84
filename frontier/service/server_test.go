package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// svcWait bounds every wait for the service to catch up. It is a
// liveness bound, not a speed assertion: a healthy run takes milliseconds.
const svcWait = 30 * time.Second

// svcConfig is a small, fast frontier on e: no politeness delay, a
// 1 s lease timeout, a 100k-key filter in t.TempDir().
func svcConfig(t testing.TB, e *bus.Embedded) config.Config {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.NATS.URL = e.ClientURL()
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.CommitInterval = 5 * time.Millisecond
	cfg.Frontier.LeaseTimeout = time.Second
	cfg.Frontier.MetricsAddr = ""
	cfg.Politeness.MinDelay = 0
	cfg.Politeness.DelayFactor = 0
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// svcHarness is a running Server plus a fake crawler's view of NATS.
type svcHarness struct {
	t      testing.TB
	cfg    config.Config
	nc     *nats.Conn
	js     jetstream.JetStream
	subj   msg.Subjects
	st     *frontier.State
	svc    *Server
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned runErr
	runErr error
}

func startService(t testing.TB, e *bus.Embedded, cfg config.Config) *svcHarness {
	t.Helper()
	return startServiceWith(t, cfg, bustest.Connect(t, e), nil, Options{AckWait: 2 * time.Second})
}

// startServiceWith starts a Server with opts (its Config set to cfg) on
// svcNC, or on nc, the harness's own connection, when svcNC is nil;
// tweaks change the Server before it runs.
func startServiceWith(t testing.TB, cfg config.Config, nc, svcNC *nats.Conn, opts Options, tweaks ...func(*Server)) *svcHarness {
	t.Helper()
	h := publisher(t, cfg, nc)
	if svcNC == nil {
		svcNC = nc
	}
	st, err := frontier.Open(frontier.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	opts.Config = cfg
	svc, err := New(svcNC, st, opts)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	for _, f := range tweaks {
		f(svc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.st, h.svc, h.cancel, h.done = st, svc, cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		h.runErr = svc.Run(ctx)
	}()
	t.Cleanup(func() { h.stop() })
	h.waitServing()
	return h
}

// waitServing waits until the responders answer.
func (h *svcHarness) waitServing() {
	h.t.Helper()
	deadline := time.Now().Add(svcWait)
	for time.Now().Before(deadline) {
		if _, err := h.nc.Request(h.subj.Status(), nil, time.Second); err == nil {
			return
		}
		select {
		case <-h.done:
			h.t.Fatalf("service ended before serving: %v", h.runErr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	h.t.Fatal("service did not start serving")
}

// stop cancels Run, waits for it and closes the State; it is idempotent.
func (h *svcHarness) stop() error {
	if h.st == nil {
		return nil
	}
	h.cancel()
	<-h.done
	err := h.runErr
	if cerr := h.st.Close(); cerr != nil && err == nil {
		err = cerr
	}
	h.st = nil
	return err
}

func (h *svcHarness) publish(subject string, data []byte) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	if _, err := h.js.Publish(ctx, subject, data); err != nil {
		h.t.Fatalf("publish %s: %v", subject, err)
	}
}

func (h *svcHarness) links(source string, depth uint32, urls ...string) {
	h.t.Helper()
	lb := msg.LinkBatch{Source: source, Depth: depth}
	for _, u := range urls {
		lb.Links = append(lb.Links, msg.Link{URL: u, Kind: 1})
	}
	b, err := lb.MarshalBinary()
	if err != nil {
		h.t.Fatal(err)
	}
	h.publish(h.subj.Links(h.cfg.Frontier.Shard), b)
}

func (h *svcHarness) report(o msg.Outcome) {
	h.t.Helper()
	o.Shard = uint32(h.cfg.Frontier.Shard)
	if o.FetchedAt.IsZero() {
		o.FetchedAt = time.Now()
	}
	b, err := o.MarshalBinary()
	if err != nil {
		h.t.Fatal(err)
	}
	h.publish(h.subj.Done(h.cfg.Frontier.Shard), b)
}

// request sends raw bytes to the work subject and decodes the reply.
func (h *svcHarness) request(data []byte) msg.LeaseReply {
	h.t.Helper()
	m, err := h.nc.Request(h.subj.Work(), data, svcWait)
	if err != nil {
		h.t.Fatalf("work request: %v", err)
	}
	var rep msg.LeaseReply
	if err := rep.UnmarshalBinary(m.Data); err != nil {
		h.t.Fatalf("lease reply: %v", err)
	}
	return rep
}

func (h *svcHarness) lease(max int) []msg.Lease {
	h.t.Helper()
	b, _ := (&msg.LeaseRequest{Crawler: "test", Max: uint32(max)}).MarshalBinary()
	return h.request(b).Leases
}

// settle waits until every published message is committed and acked.
func (h *svcHarness) settle() msg.Status {
	h.t.Helper()
	deadline := time.Now().Add(svcWait)
	for {
		st := h.svc.Status()
		if st.Pending == 0 {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("still %d messages pending", st.Pending)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// leaseUntil leases (up to max per call) until it has at least want
// leases or svcWait passes.
func (h *svcHarness) leaseUntil(max, want int) []msg.Lease {
	h.t.Helper()
	var got []msg.Lease
	deadline := time.Now().Add(svcWait)
	for len(got) < want && time.Now().Before(deadline) {
		ls := h.lease(max)
		got = append(got, ls...)
		if len(ls) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(got) < want {
		h.t.Fatalf("got %d leases, want %d", len(got), want)
	}
	return got
}

// crawlRobots answers every robots lease among ls with a 404 (allow all)
// and returns the page leases.
func (h *svcHarness) crawlRobots(ls []msg.Lease) []msg.Lease {
	var pages []msg.Lease
	for _, l := range ls {
		if l.Robots {
			h.report(msg.Outcome{LeaseID: l.ID, URL: l.URL, Robots: true, Status: 404})
		} else {
			pages = append(pages, l)
		}
	}
	return pages
}

func TestServiceEndToEnd(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	h := startService(t, e, svcConfig(t, e))

	h.links("", 0, "http://a.test/", "http://B.test:80/") // seeds
	st := h.settle()
	if st.Admitted != 2 || st.Queued != 2 || st.LinksReceived != 2 {
		t.Fatalf("after seeds: admitted %d queued %d received %d, want 2 2 2", st.Admitted, st.Queued, st.LinksReceived)
	}

	// The first lease of each host is its robots.txt.
	ls := h.leaseUntil(10, 2)
	for _, l := range ls {
		if !l.Robots {
			t.Fatalf("first lease %+v is not a robots lease", l)
		}
	}
	h.crawlRobots(ls)
	h.settle()
	pages := h.leaseUntil(10, 2)
	seen := map[string]bool{}
	for _, l := range pages {
		if l.Robots {
			t.Fatalf("robots lease %+v after robots.txt was answered", l)
		}
		seen[l.URL] = true
	}
	if !seen["http://a.test/"] || !seen["http://b.test/"] {
		t.Fatalf("page leases %v, want the two seeds (canonical)", seen)
	}

	// The crawler fetches both and reports what a.test/ links to.
	for _, l := range pages {
		if l.URL == "http://a.test/" {
			h.links(l.URL, l.Depth, "http://a.test/x", "http://a.test/y", "http://a.test/", "http://elsewhere.test/z")
		}
		h.report(msg.Outcome{LeaseID: l.ID, URL: l.URL, Status: 200, Timings: msg.Timings{Total: time.Millisecond}})
	}
	st = h.settle()
	var rejected uint64
	for _, n := range st.Rejected {
		rejected += n
	}
	if st.Admitted != 4 || st.Duplicates != 1 || rejected != 1 || st.Done != 2 || st.Queued != 2 || st.Leased != 0 {
		t.Fatalf("after links: %+v\nwant admitted 4, duplicates 1, rejected 1 (not a seed host), done 2, queued 2, leased 0", st)
	}

	// Status and explain answer over NATS too.
	m, err := h.nc.Request(h.subj.Status(), nil, svcWait)
	if err != nil {
		t.Fatal(err)
	}
	got, err := msg.UnmarshalStatus(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Admitted != 4 || got.Queued != 2 || got.Shards != 1 {
		t.Fatalf("status reply %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	tests := []struct {
		url, state string
		seen       bool
	}{
		{"http://A.test/x", "queued", true},
		{"http://a.test/", "done", true},
		{"http://a.test/never", "unknown", false},
	}
	for _, tt := range tests {
		rep, err := RequestExplain(ctx, h.nc, h.cfg, tt.url)
		if err != nil {
			t.Fatalf("explain %s: %v", tt.url, err)
		}
		var ex frontier.Explanation
		if err := json.Unmarshal(rep.Explain, &ex); err != nil {
			t.Fatal(err)
		}
		if ex.State != tt.state || ex.FilterSeen != tt.seen {
			t.Errorf("explain %s: state %q filter_seen %v, want %q %v", tt.url, ex.State, ex.FilterSeen, tt.state, tt.seen)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
}

func TestServiceDeadLetters(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	h := startService(t, e, svcConfig(t, e))
	outcome, _ := (&msg.Outcome{LeaseID: 1, URL: "http://a.test/"}).MarshalBinary()
	otherShard, _ := (&msg.Outcome{LeaseID: 1, Shard: 7, URL: "http://a.test/"}).MarshalBinary()
	// A batch is dead-lettered whole when one of its outcomes is bad.
	mixed, _ := (&msg.OutcomeBatch{Outcomes: []*msg.Outcome{{LeaseID: 1, URL: "http://a.test/"}, {LeaseID: 2, Shard: 7, URL: "http://a.test/"}}}).MarshalBinary()
	bad := []struct {
		subject string
		data    []byte
		err     error
	}{
		{h.subj.Links(0), []byte("garbage"), msg.ErrVersion},
		{h.subj.Links(0), outcome, msg.ErrType}, // the wrong type for the subject
		{h.subj.Done(0), []byte{1, 2, 0xff}, msg.ErrTruncated},
		{h.subj.Done(0), otherShard, msg.ErrMalformed},
		{h.subj.Done(0), mixed, msg.ErrMalformed},
		{h.subj.Links(0), mixed, msg.ErrType},
		{h.subj.Links(0), nil, msg.ErrTruncated},
	}
	for _, b := range bad {
		h.publish(b.subject, b.data)
	}
	h.links("", 0, "http://a.test/") // good messages around bad ones still count
	st := h.settle()
	if st.DecodeErrors != uint64(len(bad)) || st.Admitted != 1 {
		t.Fatalf("decode errors %d admitted %d, want %d 1", st.DecodeErrors, st.Admitted, len(bad))
	}

	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	// An operator's consumer of the dead subject (work-queue streams need
	// explicit acks).
	c, err := h.js.CreateConsumer(ctx, msg.DefaultStream, jetstream.ConsumerConfig{
		FilterSubject: h.subj.Dead(0), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(len(bad), jetstream.FetchMaxWait(svcWait))
	if err != nil {
		t.Fatal(err)
	}
	var dead []jetstream.Msg
	for m := range batch.Messages() {
		dead = append(dead, m)
	}
	if len(dead) != len(bad) {
		t.Fatalf("%d dead letters, want %d (%v)", len(dead), len(bad), batch.Error())
	}
	for i, b := range bad {
		m := dead[i]
		if string(m.Data()) != string(b.data) || m.Headers().Get(HeaderDeadSubject) != b.subject || m.Headers().Get(HeaderDeadError) == "" {
			t.Errorf("dead letter %d: data %q subject %q error %q; want %q from %s",
				i, m.Data(), m.Headers().Get(HeaderDeadSubject), m.Headers().Get(HeaderDeadError), b.data, b.subject)
		}
	}
	// Acked once stored: nothing comes back after the ack wait.
	if st := h.settle(); st.DecodeErrors != uint64(len(bad)) {
		t.Fatalf("decode errors grew to %d", st.DecodeErrors)
	}
}

func TestWorkResponderCaps(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	cfg.Frontier.MaxLeasesPerReply = 3
	h := startService(t, e, cfg)
	var seeds []string
	for i := range 10 {
		seeds = append(seeds, fmt.Sprintf("http://h%d.test/", i))
	}
	h.links("", 0, seeds...)
	h.settle()

	req := func(max uint32) []byte { b, _ := (&msg.LeaseRequest{Crawler: "t", Max: max}).MarshalBinary(); return b }
	tests := []struct {
		name string
		data []byte
		want int
	}{
		{"over the per-reply cap", req(10), 3},
		{"under the cap", req(2), 2},
		{"zero", req(0), 0},
		{"garbage", []byte("not a lease request"), 0},
		{"empty", nil, 0},
		{"the rest, capped", req(100), 3},
		{"the last two hosts", req(100), 2},
		{"every host in flight", req(100), 0},
	}
	hosts := map[string]bool{}
	for _, tt := range tests {
		rep := h.request(tt.data)
		if len(rep.Leases) != tt.want || rep.Shard != 0 {
			t.Fatalf("%s: %d leases from shard %d, want %d from 0", tt.name, len(rep.Leases), rep.Shard, tt.want)
		}
		for _, l := range rep.Leases {
			if hosts[l.URL] {
				t.Fatalf("%s: %s leased twice (max_inflight_per_host 1)", tt.name, l.URL)
			}
			hosts[l.URL] = true
		}
	}
	if st := h.svc.Status(); st.Leased != 10 {
		t.Fatalf("leased %d, want 10", st.Leased)
	}
}

func TestLeaseExpiryRedelivers(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	h := startService(t, e, svcConfig(t, e))
	h.links("", 0, "http://a.test/")
	h.settle()
	h.crawlRobots(h.leaseUntil(1, 1))
	h.settle()
	first := h.leaseUntil(1, 1)[0]
	// The crawler "dies": no outcome. After lease_timeout (1 s) the URL
	// returns to its queue and is leased again under a new ID.
	again := h.leaseUntil(1, 1)[0]
	if again.URL != first.URL || again.ID == first.ID || again.Robots {
		t.Fatalf("re-lease %+v after %+v", again, first)
	}
	// The dead crawler's late outcome is ignored; the live one's counts.
	h.report(msg.Outcome{LeaseID: first.ID, URL: first.URL, Status: 200})
	if st := h.settle(); st.Done != 0 || st.Leased != 1 {
		t.Fatalf("after a stale outcome: done %d leased %d, want 0 1", st.Done, st.Leased)
	}
	h.report(msg.Outcome{LeaseID: again.ID, URL: again.URL, Status: 200})
	if st := h.settle(); st.Done != 1 || st.Leased != 0 || st.Queued != 0 {
		t.Fatalf("after the outcome: done %d leased %d queued %d, want 1 0 0", st.Done, st.Leased, st.Queued)
	}
}

func TestServiceRestartResumes(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	h := startService(t, e, cfg)
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3", "http://b.test/1"}
	h.links("", 0, urls...)
	h.settle()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// Published while no frontier runs: waits in the stream.
	h.links("", 0, append(urls, "http://b.test/2")...)

	h2 := startService(t, e, cfg)
	st := h2.settle()
	if st.Admitted != 5 || st.Duplicates != 4 || st.Queued != 5 {
		t.Fatalf("after restart: admitted %d duplicates %d queued %d, want 5 4 5", st.Admitted, st.Duplicates, st.Queued)
	}
}

func TestControlErrors(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	h := startService(t, e, svcConfig(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	tests := []struct {
		name string
		req  string
	}{
		{"not json", "{"},
		{"old version", `{"version":0,"op":"explain","url":"http://a.test/"}`},
		{"unknown op", `{"version":1,"op":"delete-everything"}`},
		{"bad url", `{"version":1,"op":"explain","url":"::"}`},
	}
	for _, tt := range tests {
		rep, err := requestControl(ctx, h.nc, h.subj.Control(0), []byte(tt.req))
		if !errors.Is(err, ErrControl) || rep.Error == "" {
			t.Errorf("%s: reply %+v, err %v; want an ErrControl", tt.name, rep, err)
		}
	}
	// No frontier on shard 3.
	cfg := h.cfg
	cfg.Frontier.Shards = 4
	for u := 0; ; u++ {
		raw := fmt.Sprintf("http://h%d.test/", u)
		if _, shard, _ := (msg.Router{Shards: 4}).Route(raw); shard == 3 {
			short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			_, err := RequestExplain(short, h.nc, cfg, raw)
			cancel()
			if !errors.Is(err, ErrNoFrontier) {
				t.Errorf("explain on a shard nobody serves: %v, want ErrNoFrontier", err)
			}
			break
		}
	}
}

// openState opens a State for cfg, closed by t.Cleanup.
func openState(t testing.TB, cfg config.Config) *frontier.State {
	t.Helper()
	st, err := frontier.Open(frontier.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// publisher is a svcHarness without a service: a crawler's side of NATS.
func publisher(t testing.TB, cfg config.Config, nc *nats.Conn) *svcHarness {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &svcHarness{t: t, cfg: cfg, nc: nc, js: js, subj: msg.NewSubjects(cfg.NATS.Prefix)}
}

func TestNewServiceRejects(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	nc := bustest.Connect(t, e)
	st := openState(t, cfg)
	if _, err := New(nil, st, Options{Config: cfg}); err == nil {
		t.Error("nil connection accepted")
	}
	bad := cfg
	bad.Frontier.Shard = 2
	if _, err := New(nc, st, Options{Config: bad}); !errors.Is(err, ErrConfig) {
		t.Errorf("shard 2 of 1: %v", err)
	}
	// The configuration is validated, not quietly given defaults again.
	bad = cfg
	bad.Frontier.CommitInterval = 0
	if _, err := New(nc, st, Options{Config: bad}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "frontier.commit_interval") {
		t.Errorf("commit_interval 0: %v, want an ErrConfig naming frontier.commit_interval", err)
	}
	svc, err := New(nc, st, Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = svc.Run(ctx) // a cancelled context stops Run at once
	if err := svc.Run(context.Background()); err == nil {
		t.Error("second Run accepted")
	}
}

// TestStatusPendingBeforeRun: an embedding process may read Status before
// Run has created the consumer; the backlog must show already.
func TestStatusPendingBeforeRun(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	nc := bustest.Connect(t, e)
	svc, err := New(nc, openState(t, cfg), Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if p := svc.Status().Pending; p != 0 {
		t.Fatalf("pending %d before any stream exists, want 0", p)
	}
	h := publisher(t, cfg, nc)
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	defer cancel()
	if _, err := bus.EnsureStream(ctx, h.js, cfg.NATS); err != nil {
		t.Fatal(err)
	}
	h.links("", 0, "http://a.test/")
	h.links("", 0, "http://b.test/")
	h.publish(h.subj.Links(1), []byte("another shard's"))
	if p := svc.Status().Pending; p != 2 {
		t.Fatalf("pending %d before Run, want 2", p)
	}
}

// TestWakeAfterEmptyReply: once a lease request was answered empty, the
// frontier says on the wake subject when work is ready, once; without an
// empty reply it says nothing.
func TestWakeAfterEmptyReply(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	h := startService(t, e, svcConfig(t, e))
	wakes, err := h.nc.SubscribeSync(h.subj.Wake())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Work arrives with nobody waiting for it: no wake.
	h.links("", 0, "http://a.test/")
	h.settle()
	if m, err := wakes.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("wake %v with no empty reply before it", m)
	}
	h.crawlRobots(h.leaseUntil(1, 1)) // leaseUntil may see empty replies
	for {                             // drain their wakes
		if _, err := wakes.NextMsg(100 * time.Millisecond); err != nil {
			break
		}
	}
	h.settle()
	if ls := h.leaseUntil(1, 1); ls[0].URL != "http://a.test/" {
		t.Fatalf("lease %+v", ls[0])
	}
	// The host's one lease slot is taken: the next request is empty.
	if ls := h.lease(1); len(ls) != 0 {
		t.Fatalf("lease %+v with the host's slot taken", ls)
	}
	// New work on another host: the empty reply earns one wake.
	h.links("", 0, "http://b.test/")
	if _, err := wakes.NextMsg(svcWait); err != nil {
		t.Fatalf("no wake after an empty reply and new work: %v", err)
	}
	if m, err := wakes.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("a second wake %v for one empty reply", m)
	}
}

func TestExpiryCutoff(t *testing.T) {
	var s Server
	mark := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s.watermark.Store(mark.UnixNano())
	if got := s.expiryCutoff(); time.Since(got) > time.Minute {
		t.Fatalf("idle and caught up: cutoff %v, want now", got)
	}
	s.behind.Store(true)
	if got := s.expiryCutoff(); !got.Equal(mark) {
		t.Fatalf("behind: cutoff %v, want the watermark %v", got, mark)
	}
	s.behind.Store(false)
	s.busy.Store(1)
	if got := s.expiryCutoff(); !got.Equal(mark) {
		t.Fatalf("applying a batch: cutoff %v, want the watermark %v", got, mark)
	}
}

// TestServiceRidesOutMissedHeartbeats: when the server goes quiet past two
// idle heartbeats with the connection still open (here a proxy holds back
// its bytes; in a cluster, a consumer leader election does it), the
// service pulls again and keeps applying. It used to stop on "no
// heartbeat received", which left its shard unserved until restarted.
func TestServiceRidesOutMissedHeartbeats(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	proxy := bustest.StartProxy(t, e.ClientURL())
	viaProxy := cfg.NATS
	viaProxy.URL = proxy.URL()
	svcNC, err := bus.Connect(context.Background(), viaProxy, t.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svcNC.Close)
	h := startServiceWith(t, cfg, bustest.Connect(t, e), svcNC,
		Options{AckWait: 2 * time.Second, PullExpiry: time.Second}) // heartbeats every 0.5 s

	h.links("", 0, "http://a.test/1") // seeds
	if st := h.settle(); st.Admitted != 1 {
		t.Fatalf("admitted %d URLs before the pause, want 1", st.Admitted)
	}

	proxy.Pause()
	deadline := time.Now().Add(svcWait)
	for counterValue(t, h.svc.m.missedHeartbeats) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no missed heartbeat noticed while the server was silent")
		}
		select {
		case <-h.done:
			t.Fatalf("service stopped while the server was silent: %v", h.runErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	proxy.Resume()

	h.links("", 0, "http://a.test/2")
	if st := h.settle(); st.Admitted != 2 {
		t.Fatalf("admitted %d URLs after the pause, want 2", st.Admitted)
	}
	select {
	case <-h.done:
		t.Fatalf("service stopped: %v", h.runErr)
	default:
	}
}

// counterValue reads a Prometheus counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestFetchedNoticeFreesTheSlot: a crawler's Fetched notice on the
// shard's fetched subject frees the host's slot and wakes crawlers that
// were answered empty, before any outcome; garbage and unknown leases on
// that subject are counted and change nothing.
func TestFetchedNoticeFreesTheSlot(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	h := startService(t, e, svcConfig(t, e))
	wakes, err := h.nc.SubscribeSync(h.subj.Wake())
	if err != nil {
		t.Fatal(err)
	}
	h.links("", 0, "http://a.test/1", "http://a.test/2")
	h.settle()
	h.crawlRobots(h.leaseUntil(1, 1))
	h.settle()
	first := h.leaseUntil(1, 1)[0]
	if ls := h.lease(1); len(ls) != 0 {
		t.Fatalf("lease %+v with the host's slot taken", ls)
	}
	for {
		if _, err := wakes.NextMsg(50 * time.Millisecond); err != nil {
			break
		}
	}
	notice := func(n msg.Fetched) {
		b, err := n.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := h.nc.Publish(h.subj.Fetched(h.cfg.Frontier.Shard), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.nc.Publish(h.subj.Fetched(h.cfg.Frontier.Shard), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	notice(msg.Fetched{LeaseID: first.ID + 1000})
	h.nc.Flush()
	if ls := h.lease(1); len(ls) != 0 {
		t.Fatalf("lease %+v after a bad and an unknown notice", ls)
	}
	notice(msg.Fetched{LeaseID: first.ID})
	if _, err := wakes.NextMsg(svcWait); err != nil {
		t.Fatalf("no wake after the notice freed the slot: %v", err)
	}
	if ls := h.lease(1); len(ls) != 1 || ls[0].URL != "http://a.test/2" {
		t.Fatalf("after the notice leased %+v, want /2 (no outcome sent yet)", ls)
	}
	m := h.svc.m.fetchedNotices
	if bad, ign, freed := counterValue(t, m.WithLabelValues("bad")), counterValue(t, m.WithLabelValues("ignored")), counterValue(t, m.WithLabelValues("freed")); bad != 1 || ign != 1 || freed != 1 {
		t.Errorf("notices counted bad %v ignored %v freed %v, want 1 each", bad, ign, freed)
	}
}

// TestFailedApplyStopsIngest: ingest prepares a batch while the one before
// it applies; when an Apply fails, Run returns its error, and neither that
// batch nor any gathered behind it is acked, so a restarted frontier gets
// them again and loses nothing.
func TestFailedApplyStopsIngest(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t)
	cfg := svcConfig(t, e)
	// No lease expiry tick, which would meet the closed State first.
	h := startServiceWith(t, cfg, bustest.Connect(t, e), nil, Options{AckWait: 2 * time.Second, ExpireInterval: time.Hour})
	h.links("", 0, "http://a.test/1")
	h.settle()
	// Closed behind the service's back: its next Apply fails.
	if err := h.st.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		h.links("", 0, fmt.Sprintf("http://b.test/%d", i))
	}
	select {
	case <-h.done:
	case <-time.After(svcWait):
		t.Fatal("Run did not end after a failed Apply")
	}
	// The Apply's error, as ingest wraps it (the tick may meet the closed
	// State too, but its error does not name batches).
	if !errors.Is(h.runErr, frontier.ErrClosed) || !strings.Contains(h.runErr.Error(), "link batches") {
		t.Fatalf("Run: %v; want the Apply's error (ErrClosed)", h.runErr)
	}
	h.st = nil // closed above

	h2 := startService(t, e, cfg)
	st := h2.settle()
	if st.Admitted != 21 || st.Queued != 21 {
		t.Fatalf("after restart: admitted %d queued %d, want 21 21: a batch was acked unapplied", st.Admitted, st.Queued)
	}
}
