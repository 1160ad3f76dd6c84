package fetcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
	"github.com/trawlhq/trawl/internal/testkit/testsite"
)

// fakeFrontier hands out the leases it is given on Subjects.Work and
// collects what the worker publishes to the stream.
type fakeFrontier struct {
	t    testing.TB
	subj msg.Subjects
	cons jetstream.Consumer

	// gen, when set, makes up leases instead of taking them from queue.
	gen func(max int) (shard uint32, leases []msg.Lease)

	// outcomeLinks sets msg.HeaderOutcomeLinks on replies, as a
	// frontier that reads links inside outcomes does; without it the
	// fake is a frontier of the release before.
	outcomeLinks bool
	// outcomeBatch sets msg.HeaderOutcomeBatch on replies too.
	outcomeBatch bool
	// outcomeV5 sets msg.HeaderOutcomeV5 (and msg.HeaderOutcomeV4) on
	// replies: the frontier reads a visit's validators and digest.
	outcomeV5 bool
	// epoch, when set, goes on replies as msg.HeaderEpoch (with a
	// max_links_per_page of 100).
	epoch string

	mu      sync.Mutex
	hold    func(*nats.Msg) bool // when it returns true the request is not answered (the test may answer it later)
	queue   []grant              // guarded by mu
	asked   []uint32
	granted int
}

type grant struct {
	shard uint32
	lease msg.Lease
}

// received is one message the worker published, with its stream sequence.
type received struct {
	subject string
	seq     uint64
	batch   *msg.LinkBatch
	outcome *msg.Outcome
}

func startFrontier(t testing.TB, nc *nats.Conn, cfg config.NATS) *fakeFrontier {
	t.Helper()
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := bus.EnsureStream(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "fake-frontier", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFrontier{t: t, subj: msg.NewSubjects(cfg.Prefix), cons: cons}
	sub, err := nc.Subscribe(f.subj.Work(), f.serve)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	return f
}

func (f *fakeFrontier) add(shard uint32, leases ...msg.Lease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range leases {
		f.queue = append(f.queue, grant{shard, l})
	}
}

// serve answers a lease request with up to Max queued leases of the shard
// at the head of the queue (one reply speaks for one shard), or nothing.
func (f *fakeFrontier) serve(m *nats.Msg) {
	var req msg.LeaseRequest
	if err := req.UnmarshalBinary(m.Data); err != nil {
		f.t.Errorf("fake frontier: bad lease request: %v", err)
		return
	}
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil && hold(m) {
		return
	}
	if f.gen != nil {
		var reply msg.LeaseReply
		reply.Shard, reply.Leases = f.gen(int(req.Max))
		f.respond(m, &reply)
		return
	}
	f.mu.Lock()
	reply := msg.LeaseReply{}
	f.asked = append(f.asked, req.Max)
	for len(f.queue) > 0 && len(reply.Leases) < int(req.Max) {
		g := f.queue[0]
		if len(reply.Leases) > 0 && g.shard != reply.Shard {
			break
		}
		reply.Shard = g.shard
		reply.Leases = append(reply.Leases, g.lease)
		f.queue = f.queue[1:]
	}
	f.granted += len(reply.Leases)
	f.mu.Unlock()
	f.respond(m, &reply)
}

func (f *fakeFrontier) respond(m *nats.Msg, reply *msg.LeaseReply) {
	data, _ := reply.MarshalBinary()
	r := nats.NewMsg(m.Reply)
	r.Data = data
	if f.outcomeLinks {
		r.Header.Set(msg.HeaderOutcomeLinks, "1")
	}
	if f.outcomeBatch {
		r.Header.Set(msg.HeaderOutcomeBatch, "1")
	}
	if f.outcomeV5 {
		r.Header.Set(msg.HeaderOutcomeV4, "1")
		r.Header.Set(msg.HeaderOutcomeV5, "1")
	}
	if f.epoch != "" {
		r.Header.Set(msg.HeaderEpoch, f.epoch)
		r.Header.Set(msg.HeaderLinksPerPage, "100")
	}
	m.RespondMsg(r)
}

// collect reads from the stream until it holds want outcomes.
func (f *fakeFrontier) collect(want int, timeout time.Duration) []received {
	f.t.Helper()
	var out []received
	outcomes := 0
	deadline := time.Now().Add(timeout)
	for outcomes < want && time.Now().Before(deadline) {
		batch, err := f.cons.Fetch(100, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			f.t.Fatal(err)
		}
		for m := range batch.Messages() {
			md, _ := m.Metadata()
			r := received{subject: m.Subject(), seq: md.Sequence.Stream}
			typ, err := msg.PeekType(m.Data())
			switch {
			case err != nil:
				f.t.Errorf("undecodable message on %s: %v", m.Subject(), err)
			case typ == msg.TypeLinkBatch:
				r.batch = new(msg.LinkBatch)
				if err := r.batch.UnmarshalBinary(m.Data()); err != nil {
					f.t.Errorf("link batch: %v", err)
				}
			case typ == msg.TypeOutcome:
				r.outcome = new(msg.Outcome)
				if err := r.outcome.UnmarshalBinary(m.Data()); err != nil {
					f.t.Errorf("outcome: %v", err)
				}
				outcomes++
			case typ == msg.TypeOutcomeBatch && f.outcomeBatch:
				// One received per outcome, all at the batch's sequence.
				var ob msg.OutcomeBatch
				if err := ob.UnmarshalBinary(m.Data()); err != nil {
					f.t.Errorf("outcome batch: %v", err)
				}
				for _, o := range ob.Outcomes {
					out = append(out, received{subject: r.subject, seq: r.seq, outcome: o})
				}
				outcomes += len(ob.Outcomes)
				m.Ack()
				continue
			default:
				f.t.Errorf("%v on %s", typ, m.Subject())
			}
			m.Ack()
			out = append(out, r)
		}
	}
	return out
}

func workerConfig(dir string) config.Crawler {
	c := testConfig()
	c.Workers = 4
	c.LeaseBatch = 3
	c.MaxBody = 1 << 20
	// Generous: no test here waits for a timeout, and under -race on two
	// cores shared with other packages' tests a loopback response has
	// taken more than a second to start (TestWorker failed in CI so).
	c.FetchTimeout = 20 * time.Second
	c.HeaderTimeout = 10 * time.Second
	c.FetchLog = filepath.Join(dir, "fetch.jsonl")
	c.WARCDir = filepath.Join(dir, "warc")
	return c
}

// TestWorker runs a worker against a frontier of the release before
// (own-shard links as link batches), one that reads them inside outcomes,
// and one that also reads outcome batches: the same links and outcomes
// reach the same shards every way.
func TestWorker(t *testing.T) {
	t.Run("links in batches", func(t *testing.T) { testWorker(t, false, false) })
	t.Run("links in outcomes", func(t *testing.T) { testWorker(t, true, false) })
	t.Run("outcome batches", func(t *testing.T) { testWorker(t, true, true) })
}

func testWorker(t *testing.T, outcomeLinks, outcomeBatch bool) {
	const shards = 3
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><link rel="canonical" href="/"></head><body>
<a href="/a">a</a> <a href="/b" rel="nofollow">b</a> <a href="http://other.test/x#frag">x</a>
<img src="/i.png"> <a href="HTTP://Third.TEST:80/y">y</a> <a href="mailto:x@y.test">m</a></body></html>`)
	})
	mux.HandleFunc("/nofollow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<meta name="robots" content="nofollow"><a href="/a">a</a>`)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://other.test/new", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "User-agent: *\nDisallow: /private\n") })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	bomb := testsite.Gzip(t, []byte(strings.Repeat(" ", 4<<20)+`<a href="/late">late</a>`))
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	})
	mux.HandleFunc("/binary", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("\x00\x01\x02<a href=/nope>n</a>"))
	})
	mux.HandleFunc("/reset", testsite.Hijack(func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5000\r\n\r\n<a href=/partial>p</a>"))
		c.(*net.TCPConn).SetLinger(0)
	}))
	site, _ := testsite.Start(t, mux)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String() + "/"
	l.Close()

	e := bustest.Start(t)
	natsCfg := config.Default().NATS
	fnc := bustest.Connect(t, e)
	front := startFrontier(t, fnc, natsCfg)
	front.outcomeLinks, front.outcomeBatch = outcomeLinks, outcomeBatch
	deadline := time.Now().Add(time.Minute)
	leases := []struct {
		shard uint32
		lease msg.Lease
	}{
		{0, msg.Lease{ID: 1, URL: site.URL + "/", Depth: 2, Deadline: deadline}},
		{0, msg.Lease{ID: 2, URL: site.URL + "/nofollow", Depth: 0, Deadline: deadline}},
		{1, msg.Lease{ID: 3, URL: site.URL + "/moved", Depth: 1, Deadline: deadline}},
		{1, msg.Lease{ID: 4, URL: site.URL + "/robots.txt", Robots: true, Deadline: deadline}},
		{2, msg.Lease{ID: 5, URL: site.URL + "/busy", Deadline: deadline}},
		{2, msg.Lease{ID: 6, URL: site.URL + "/bomb", Deadline: deadline}},
		{2, msg.Lease{ID: 7, URL: site.URL + "/binary", Deadline: deadline}},
		{0, msg.Lease{ID: 8, URL: site.URL + "/reset", Deadline: deadline}},
		{0, msg.Lease{ID: 9, URL: dead, Deadline: deadline}},
		{1, msg.Lease{ID: 10, URL: site.URL + "/expired", Deadline: time.Now().Add(-time.Second)}},
	}
	for _, g := range leases {
		front.add(g.shard, g.lease)
	}

	// Fetched notices, by lease: shard of the subject and of the notice.
	var notices sync.Map // lease ID -> [2]int
	nsub, err := fnc.Subscribe(front.subj.Prefix+".fetched.*", func(m *nats.Msg) {
		var n msg.Fetched
		if err := n.UnmarshalBinary(m.Data); err != nil {
			t.Errorf("fetched notice: %v", err)
			return
		}
		var shard int
		fmt.Sscanf(m.Subject, "trawl.fetched.%d", &shard)
		if _, dup := notices.LoadOrStore(n.LeaseID, [2]int{shard, int(n.Shard)}); dup {
			t.Errorf("two fetched notices for lease %d", n.LeaseID)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer nsub.Unsubscribe()
	if err := fnc.Flush(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cfg := workerConfig(dir)
	cfg.MaxBody = 1 << 20 // the bomb inflates to 4 MiB: truncated, its late link lost
	w, err := NewWorker(bustest.Connect(t, e), WorkerOptions{Config: cfg, Subjects: msg.NewSubjects(natsCfg.Prefix), Shards: shards, ID: "test-worker"})
	if err != nil {
		t.Fatal(err)
	}
	cancel, wait := runWorker(w)
	got := front.collect(len(leases)-1, 30*time.Second)
	cancel()
	if err := wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	// Outcomes: one per lease but the expired one, on the lease's shard.
	outcomes := map[uint64]*msg.Outcome{}
	outcomeSeq := map[string]uint64{}
	batches := map[string][]msg.Link{} // "shard source" -> links in order
	batchSeq := map[string]uint64{}    // source -> highest sequence of its batches
	for _, r := range got {
		var shard int
		switch {
		case r.outcome != nil:
			fmt.Sscanf(r.subject, "trawl.done.%d", &shard)
			if uint32(shard) != r.outcome.Shard {
				t.Errorf("outcome of lease %d on %s, want shard %d", r.outcome.LeaseID, r.subject, r.outcome.Shard)
			}
			if outcomes[r.outcome.LeaseID] != nil {
				t.Errorf("two outcomes for lease %d", r.outcome.LeaseID)
			}
			outcomes[r.outcome.LeaseID] = r.outcome
			outcomeSeq[r.outcome.URL] = r.seq
			if lb := r.outcome.Links; lb != nil {
				if !outcomeLinks {
					t.Errorf("lease %d: links in the outcome for a frontier that did not ask for them", r.outcome.LeaseID)
				}
				if lb.Source != r.outcome.URL || lb.Depth != depthOf(leases, lb.Source) {
					t.Errorf("outcome links from %s at depth %d, want %s at its lease's depth", lb.Source, lb.Depth, r.outcome.URL)
				}
				k := fmt.Sprintf("%d %s", shard, lb.Source)
				batches[k] = append(batches[k], lb.Links...)
			}
		case r.batch != nil:
			fmt.Sscanf(r.subject, "trawl.links.%d", &shard)
			if ls, _ := leaseFor(leases, r.batch.Source); outcomeLinks && ls == shard {
				t.Errorf("a link batch from %s to its own lease's shard %d: want it in the outcome", r.batch.Source, shard)
			}
			k := fmt.Sprintf("%d %s", shard, r.batch.Source)
			batches[k] = append(batches[k], r.batch.Links...)
			batchSeq[r.batch.Source] = max(batchSeq[r.batch.Source], r.seq)
			if r.batch.Depth != depthOf(leases, r.batch.Source) {
				t.Errorf("batch from %s has depth %d", r.batch.Source, r.batch.Depth)
			}
		}
	}
	type want struct {
		status    int
		links     uint32
		errLike   string
		truncated bool
		redirect  string
		retry     time.Duration
		body      string
	}
	wants := map[uint64]want{
		1: {status: 200, links: 6},
		2: {status: 200, links: 1},
		3: {status: 301, links: 1, redirect: "http://other.test/new"},
		4: {status: 200, body: "User-agent: *\nDisallow: /private\n"},
		5: {status: 429, retry: 30 * time.Second},
		6: {status: 200, truncated: true},
		7: {status: 200},
		8: {status: 200, links: 1, errLike: "connection reset"},
		9: {status: 0, errLike: "connection refused"},
	}
	if len(outcomes) != len(wants) {
		t.Errorf("%d outcomes, want %d", len(outcomes), len(wants))
	}
	for id, wt := range wants {
		o := outcomes[id]
		if o == nil {
			t.Errorf("lease %d: no outcome", id)
			continue
		}
		if o.Status != wt.status || o.LinksFound != wt.links || o.Truncated != wt.truncated || o.Redirect != wt.redirect ||
			o.RetryAfter != wt.retry || string(o.Body) != wt.body || (wt.errLike == "") != (o.Error == "") || !strings.Contains(o.Error, wt.errLike) {
			t.Errorf("lease %d: got status %d links %d truncated %v redirect %q retry %v body %q err %q\nwant %+v",
				id, o.Status, o.LinksFound, o.Truncated, o.Redirect, o.RetryAfter, o.Body, o.Error, wt)
		}
	}
	if o := outcomes[4]; o != nil && !o.Robots {
		t.Error("robots lease outcome without Robots set")
	}

	// A Fetched notice, on the lease's shard, for each page whose response
	// needs no back-off; none for robots.txt (4), the 429 (5), the reset
	// body (8), the refused connection (9) or the expired lease (10).
	wantNotice := map[uint64]int{1: 0, 2: 0, 3: 1, 6: 2, 7: 2}
	for id := uint64(1); id <= 10; id++ {
		v, ok := notices.Load(id)
		shard, want := wantNotice[id]
		switch {
		case ok != want:
			t.Errorf("lease %d: fetched notice sent %v, want %v", id, ok, want)
		case ok && v.([2]int) != [2]int{shard, shard}:
			t.Errorf("lease %d: notice on subject/of shard %v, want %d", id, v, shard)
		}
	}

	// Link batches: exactly the links of each page, grouped by the shard
	// owning their host, in document order.
	shardOf := func(u string) int {
		_, shard, err := msg.Router{Shards: shards}.Route(u)
		if err != nil {
			t.Fatalf("canonical %s: %v", u, err)
		}
		return shard
	}
	root := site.URL + "/"
	expect := map[string][]msg.Link{}
	add := func(source string, l msg.Link) {
		k := fmt.Sprintf("%d %s", shardOf(l.URL), source)
		expect[k] = append(expect[k], l)
	}
	add(root, msg.Link{URL: site.URL + "/", Kind: 4})
	add(root, msg.Link{URL: site.URL + "/a", Kind: 1})
	add(root, msg.Link{URL: site.URL + "/b", Kind: 1, NoFollow: true})
	add(root, msg.Link{URL: "http://other.test/x#frag", Kind: 1})
	add(root, msg.Link{URL: site.URL + "/i.png", Kind: 2})
	add(root, msg.Link{URL: "http://third.test/y", Kind: 1})
	add(site.URL+"/nofollow", msg.Link{URL: site.URL + "/a", Kind: 1, NoFollow: true})
	add(site.URL+"/moved", msg.Link{URL: "http://other.test/new", Kind: 3, Hops: 1}) // the lease's 0 hops + 1
	add(site.URL+"/reset", msg.Link{URL: site.URL + "/partial", Kind: 1})
	if !reflect.DeepEqual(batches, expect) {
		t.Errorf("link batches by shard:\n got %v\nwant %v", batches, expect)
	}
	// A page's links are stored before its outcome.
	for src, seq := range batchSeq {
		if oseq := outcomeSeq[src]; oseq < seq {
			t.Errorf("%s: outcome (seq %d) stored before its links (seq %d)", src, oseq, seq)
		}
	}

	st := w.Stats()
	if st.Fetched != 9 || st.Expired != 1 || st.Leases != 10 || st.Robots != 1 || st.Outcomes != 9 || st.InFlight != 0 ||
		st.Status2xx != 6 || st.Status3xx != 1 || st.Status4xx != 1 || st.NoStatus != 1 || st.LinksPublished != 9 || st.Errors != 2 {
		t.Errorf("stats %+v", st)
	}
	if (st.LinksInOutcomes > 0) != outcomeLinks {
		t.Errorf("%d links in outcomes; frontier reads them there: %v", st.LinksInOutcomes, outcomeLinks)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.Collector())
	if fams, err := reg.Gather(); err != nil || len(fams) != 16 {
		t.Errorf("metrics: %d families, err %v", len(fams), err)
	}
	front.mu.Lock()
	for _, n := range front.asked {
		if n < 1 || n > uint32(cfg.LeaseBatch) {
			t.Errorf("asked for %d leases; lease_batch is %d", n, cfg.LeaseBatch)
		}
	}
	front.mu.Unlock()
	lines := readLines(t, cfg.FetchLog)
	if len(lines) != 9 {
		t.Errorf("fetch log has %d lines, want 9", len(lines))
	}
	// The line of the body cut at max_body says so; no other does.
	for _, line := range lines {
		var e LogEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("fetch log line %q: %v", line, err)
		}
		if bomb := strings.HasSuffix(e.URL, "/bomb"); e.Truncated != bomb {
			t.Errorf("fetch log line of %s: truncated %v, want %v", e.URL, e.Truncated, bomb)
		}
	}
	warcs, _ := filepath.Glob(filepath.Join(cfg.WARCDir, "*.warc.gz"))
	if len(warcs) != 1 {
		t.Errorf("WARC files %v, want one finished file", warcs)
	}
}

func depthOf(leases []struct {
	shard uint32
	lease msg.Lease
}, url string) uint32 {
	_, depth := leaseFor(leases, url)
	return depth
}

// leaseFor returns the shard and depth of the lease of url, or -1 and
// 1<<31 when there is none.
func leaseFor(leases []struct {
	shard uint32
	lease msg.Lease
}, url string) (shard int, depth uint32) {
	for _, g := range leases {
		if g.lease.URL == url {
			return int(g.shard), g.lease.Depth
		}
	}
	return -1, 1 << 31
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func TestRoute(t *testing.T) {
	long := "http://a.test/" + strings.Repeat("p", 2000)
	var links []msg.Link
	for i := 0; i < 300; i++ {
		links = append(links, msg.Link{URL: fmt.Sprintf("%s%d", long, i), Kind: 1})
	}
	links = append(links, msg.Link{URL: "http://exa mple.test/", Kind: 1}, msg.Link{URL: "http://b.test/" + strings.Repeat("q", msg.MaxURLLen), Kind: 1})
	// With two shards a URL that does not canonicalize has no owner and
	// is dropped; with one, the frontier rejects it. One too long for the
	// wire is dropped either way.
	if r := route("http://src.test/", 3, links, msg.Router{Shards: 2}, nil); r.links != 300 || r.dropped != 2 {
		t.Fatalf("two shards: links %d dropped %d", r.links, r.dropped)
	}
	r := route("http://src.test/", 3, links, msg.Router{Shards: 1}, nil)
	if r.links != 301 || r.dropped != 1 || len(r.shards) != 1 {
		t.Fatalf("links %d dropped %d shards %v", r.links, r.dropped, r.shards)
	}
	var n int
	for _, b := range r.batches[0] {
		enc, err := b.MarshalBinary()
		if err != nil || len(enc) > maxBatchBytes {
			t.Errorf("batch of %d bytes (limit %d): %v", len(enc), maxBatchBytes, err)
		}
		n += len(b.Links)
	}
	if n != 301 || len(r.batches[0]) < 3 {
		t.Errorf("%d links in %d batches", n, len(r.batches[0]))
	}
}

func TestNewWorkerRejects(t *testing.T) {
	e := bustest.Start(t)
	nc := bustest.Connect(t, e)
	good := WorkerOptions{Config: testConfig(), Shards: 1}
	for name, mutate := range map[string]func(*WorkerOptions){
		"no shards":  func(o *WorkerOptions) { o.Shards = 0 },
		"no workers": func(o *WorkerOptions) { o.Config.Workers = 0 },
		"no agent":   func(o *WorkerOptions) { o.Config.UserAgent = "" },
		"bad resolve": func(o *WorkerOptions) {
			o.Config.Resolve = map[string]string{"a.test:80": "nowhere"}
		},
	} {
		o := good
		mutate(&o)
		if _, err := NewWorker(nc, o); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", name, err)
		}
	}
}
