package service

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/internal/testkit/bustest"
)

// The kill -9 test. The parent runs an embedded nats-server, a publisher
// of link batches and a fake crawler (leases, robots.txt answers, page
// outcomes of every kind, some leases abandoned). A frontier child process
// (this test binary re-executed, selected by killEnvNATS) serves the shard
// and is SIGKILLed at a random moment, then restarted, for killRounds
// rounds (-soak: killSoakRounds). Then the load stops, a last child drains
// the stream and stops gracefully, and the parent opens the state file and
// checks the DESIGN.md invariant for every URL whose publish JetStream
// acked: it is queued, leased or done (and the filter says seen), or
// recorded as skipped by a scope rule.

var soak = flag.Bool("soak", false, "run the long kill -9 soak (50 rounds)")

const (
	killEnvNATS = "TRAWL_FRONTIER_KILL_NATS"
	killEnvFile = "TRAWL_FRONTIER_KILL_FILE"
	// killEnvContinuous, set, runs the child in continuous mode
	// (TestKill9Continuous).
	killEnvContinuous = "TRAWL_FRONTIER_KILL_CONTINUOUS"
	killRounds        = 3
	killSoakRounds    = 50
	killHosts         = 32
	killAckWait       = 500 * time.Millisecond // a killed child's messages come back after this
)

// killConfig is the configuration parent and child share.
func killConfig(natsURL, file string) config.Config {
	cfg := config.Default()
	cfg.DataDir = filepath.Dir(file)
	cfg.NATS.URL = natsURL
	cfg.Frontier.DataFile = file
	// A scalable filter that grows several times during the run, so kills
	// land right after growth events, with journal entries of sub-filters
	// created after the last checkpoint. The rate is low (about 0.05
	// false-positive skips expected a run), and the audit samples every
	// key, so that a skip the filter did make is told from a lost URL:
	// check allows at most as many as the audit counted.
	cfg.Audit.Fraction = 1
	cfg.Frontier.Filter.Mode = "scalable"
	// From 250 keys it grows past three sub-filters within the first
	// round, and folds (frontier.filter.fold) in every later one.
	cfg.Frontier.Filter.Initial = 250
	cfg.Frontier.Filter.FP = 1e-6
	cfg.Frontier.Filter.Capacity = 200_000
	cfg.Frontier.CommitInterval = 5 * time.Millisecond
	// Kills land in checkpoints too, and so in compactions: segment
	// appends, the moved records' deletion from the inbox, and leases
	// that advance a host's HeadSeq or delete its first segment.
	cfg.Frontier.CheckpointInterval = 150 * time.Millisecond
	// A transaction per filter chunk (a sub-filter each, here), so that
	// kills land between the parts of a checkpoint too.
	cfg.Frontier.CheckpointPart = 1
	// Outcomes a killed child held come back after killAckWait plus a
	// restart: the lease must outlive that, or every outcome is stale.
	cfg.Frontier.LeaseTimeout = 3 * time.Second
	cfg.Frontier.MetricsAddr = ""
	cfg.Politeness.MinDelay = 0
	cfg.Politeness.DelayFactor = 0
	cfg.Politeness.BackoffBase = 50 * time.Millisecond
	cfg.Politeness.BackoffMax = 200 * time.Millisecond
	cfg.Politeness.ErrorPause = 100 * time.Millisecond
	cfg.Politeness.ErrorStreak = 3
	cfg.Scope.SeedHostsOnly = false // redelivery may reorder seeds after links
	cfg.Scope.MaxURLLength = 200    // some published URLs are too long: skipped
	return cfg
}

// TestKill9Child is the frontier process of TestKill9; it skips unless
// re-executed by it. It serves until SIGTERM (exit 0) or SIGKILL.
func TestKill9Child(t *testing.T) {
	natsURL := os.Getenv(killEnvNATS)
	if natsURL == "" {
		t.Skip("the frontier child of TestKill9")
	}
	cfg := killConfig(natsURL, os.Getenv(killEnvFile))
	if os.Getenv(killEnvContinuous) != "" {
		cfg = continuousKillConfig(cfg)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	nc, err := bus.Connect(ctx, cfg.NATS, "kill-child", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	st, err := frontier.Open(frontier.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(nc, st, Options{Config: cfg, AckWait: killAckWait})
	if err != nil {
		t.Fatal(err)
	}
	runErr := svc.Run(ctx)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
}

// killLoad is the parent's publisher and fake crawler.
type killLoad struct {
	t    *testing.T
	nc   *nats.Conn
	js   jetstream.JetStream
	subj msg.Subjects

	leases, reported atomic.Int64 // the crawler's
	outcomeLinks     atomic.Int64 // outcomes the crawler built with links
	next             atomic.Int64 // the next page ID never published, shared by both

	mu    sync.Mutex
	acked map[string]bool // every URL in a batch or outcome whose publish was acked
}

func TestKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	rounds := killRounds
	if *soak {
		rounds = killSoakRounds
	}
	e, file, cfg, nc, js := killBus(t, nil)
	load := &killLoad{t: t, nc: nc, js: js, subj: msg.NewSubjects(cfg.NATS.Prefix), acked: map[string]bool{}}

	loadCtx, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { load.publish(loadCtx) })
	wg.Go(func() { load.crawl(loadCtx) })
	defer func() { stopLoad(); wg.Wait() }()

	start := time.Now()
	for round := range rounds {
		child, out := startKillChild(t, e.ClientURL(), file)
		waitChildServing(t, nc, load.subj, child, out)
		time.Sleep(time.Duration(100+rand.IntN(1200)) * time.Millisecond)
		sigkill(t, round, child, out)
	}
	stopLoad()
	wg.Wait()
	t.Logf("%d rounds of load and kills: %v", rounds, time.Since(start))

	// A last child drains what the killed ones left, then stops gracefully.
	child, out := startKillChild(t, e.ClientURL(), file)
	waitChildServing(t, nc, load.subj, child, out)
	waitDrained(t, nc, load.subj)
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("final child: %v\n%s", err, out)
	}

	t.Logf("drained and stopped: %v", time.Since(start))
	// The chain grows from 250 keys to thousands and folds in the
	// background (frontier.filter.fold, on by default) whenever it has
	// three sub-filters, so the kills land beside folds too: at least one
	// fold must have committed.
	folded := storedFolded(t, file)
	if folded == 0 {
		t.Errorf("no fold committed in %d rounds: the oldest sub-filter folds no growth index", rounds)
	} else {
		t.Logf("the stored chain's oldest sub-filter folds %d growth indices", folded)
	}
	st := reopenVerified(t, cfg, rounds)
	load.check(st, rounds, folded)
	t.Logf("checked: %v", time.Since(start))
}

// killBus starts an embedded nats-server with the stream and returns it,
// the state file's path, the configuration (killConfig, then mode when
// not nil), a connection and its JetStream.
func killBus(t *testing.T, mode func(config.Config) config.Config) (*bus.Embedded, string, config.Config, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	e := bustest.Start(t)
	file := filepath.Join(t.TempDir(), "kill.db")
	cfg := killConfig(e.ClientURL(), file)
	if mode != nil {
		cfg = mode(cfg)
	}
	nc := bustest.Connect(t, e)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), svcWait)
	_, err = bus.EnsureStream(ctx, js, cfg.NATS)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	return e, file, cfg, nc, js
}

// sigkill kills child with SIGKILL and fails the test if it had ended
// before.
func sigkill(t *testing.T, round int, child *exec.Cmd, out *bytes.Buffer) {
	t.Helper()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := child.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("round %d: child ended with %v before the kill:\n%s", round, err, out)
	}
}

// reopenVerified opens the state file after the last child stopped and
// verifies it; the test closes it.
func reopenVerified(t *testing.T, cfg config.Config, rounds int) *frontier.State {
	t.Helper()
	st, err := frontier.Open(frontier.Options{Config: cfg})
	if err != nil {
		t.Fatalf("reopen after %d kills: %v", rounds, err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Verify(); err != nil {
		t.Errorf("Verify after %d kills: %v", rounds, err)
	}
	return st
}

// leaseReplies asks for leases as crawler until ctx is done and hands
// every reply that holds some to fn; idle, when not nil, sees every
// request that got none (err: the request failed).
func leaseReplies(ctx context.Context, t *testing.T, nc *nats.Conn, subj msg.Subjects, crawler string, fn func(m *nats.Msg, rep *msg.LeaseReply), idle func(err error)) {
	req, _ := (&msg.LeaseRequest{Crawler: crawler, Max: 16}).MarshalBinary()
	for ctx.Err() == nil {
		m, err := nc.Request(subj.Work(), req, 500*time.Millisecond)
		if err != nil {
			if idle != nil {
				idle(err)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		var rep msg.LeaseReply
		if err := rep.UnmarshalBinary(m.Data); err != nil {
			t.Errorf("lease reply: %v", err)
			return
		}
		if len(rep.Leases) == 0 {
			if idle != nil {
				idle(nil)
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		fn(m, &rep)
	}
}

// storedFolded is how many growth indices the oldest sub-filter of the
// chain stored in file folds (0: none; dedup.SubfilterStats.Folded).
func storedFolded(t *testing.T, file string) int {
	t.Helper()
	db, err := bolt.Open(file, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var folded int
	err = db.View(func(tx *bolt.Tx) error {
		cc, err := dedup.StoredChain(tx)
		if err != nil {
			return err
		}
		c, err := dedup.LoadChain(tx, cc)
		if err != nil {
			return err
		}
		defer c.Close()
		if subs := c.Stats().Subfilters; len(subs) > 0 {
			folded = subs[0].Folded
		}
		return nil
	})
	if err != nil {
		t.Fatalf("load the stored chain: %v", err)
	}
	return folded
}

// startKillChild starts TestKill9Child with env (KEY=value) added.
func startKillChild(t *testing.T, natsURL, file string, env ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.v=false")
	cmd.Env = append(append(os.Environ(), killEnvNATS+"="+natsURL, killEnvFile+"="+file), env...)
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// waitChildServing waits until a frontier answers on the status subject.
func waitChildServing(t *testing.T, nc *nats.Conn, subj msg.Subjects, child *exec.Cmd, out *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(svcWait)
	for time.Now().Before(deadline) {
		if _, err := nc.Request(subj.Status(), nil, 200*time.Millisecond); err == nil {
			return
		}
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	t.Fatalf("child did not start serving:\n%s", out)
}

// waitDrained waits until the shard's consumer has nothing pending.
func waitDrained(t *testing.T, nc *nats.Conn, subj msg.Subjects) {
	t.Helper()
	deadline := time.Now().Add(2 * svcWait)
	for time.Now().Before(deadline) {
		m, err := nc.Request(subj.Status(), nil, time.Second)
		if err == nil {
			st, err := msg.UnmarshalStatus(m.Data)
			if err == nil && st.Pending == 0 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the stream did not drain")
}

// publish sends link batches until ctx is done: paths drawn from a growing
// space so that about a third repeat, a few too long for scope, and
// /private paths that host 0's robots.txt disallows.
func (l *killLoad) publish(ctx context.Context) {
	for ctx.Err() == nil {
		lb := msg.LinkBatch{Source: fmt.Sprintf("http://h%d.test/", rand.IntN(killHosts)), Depth: uint32(rand.IntN(3))}
		if l.next.Load() == 0 {
			lb.Source, lb.Depth = "", 0 // the first batch carries seeds
		}
		for range 10 {
			var id int
			if n := int(l.next.Load()); n > 0 && rand.IntN(3) == 0 {
				id = rand.IntN(n) // a repeat
			} else {
				id = int(l.next.Add(1) - 1)
			}
			lb.Links = append(lb.Links, msg.Link{URL: pageURL(id), Kind: 1})
		}
		b, err := lb.MarshalBinary()
		if err != nil {
			l.t.Error(err)
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = l.js.Publish(pctx, l.subj.Links(0), b)
		cancel()
		if err != nil {
			continue // not acked: the invariant does not cover it
		}
		l.mu.Lock()
		for _, lk := range lb.Links {
			l.acked[lk.URL] = true
		}
		l.mu.Unlock()
		time.Sleep(3 * time.Millisecond)
	}
}

// pageURL is the URL of page id: most on h<id mod killHosts>, a few too
// long for scope, and /private paths that host 0's robots.txt disallows.
func pageURL(id int) string {
	u := fmt.Sprintf("http://h%d.test/p/%d", id%killHosts, id)
	switch {
	case id%97 == 5:
		u += "/" + strings.Repeat("x", 250) // over scope.max_url_length
	case id%13 == 7:
		u = fmt.Sprintf("http://h0.test/private/%d", id)
	}
	return u
}

// crawl leases and reports until ctx is done: robots.txt (h0 disallows
// /private, the others 404), and pages answering 200, 404, 500 or 503, or
// never (an abandoned lease, which must expire and come back).
func (l *killLoad) crawl(ctx context.Context) {
	leaseReplies(ctx, l.t, l.nc, l.subj, "kill-test", func(m *nats.Msg, rep *msg.LeaseReply) {
		l.leases.Add(int64(len(rep.Leases)))
		// Half the replies' outcomes go as one batch, when the frontier
		// reads them: a kill then cuts or redelivers them together.
		var batch []*msg.Outcome
		batching := m.Header.Get(msg.HeaderOutcomeBatch) == "1" && rand.IntN(2) == 0
		for _, ls := range rep.Leases {
			o := msg.Outcome{LeaseID: ls.ID, Shard: rep.Shard, URL: ls.URL, Robots: ls.Robots, FetchedAt: time.Now(),
				Timings: msg.Timings{Total: time.Millisecond}}
			switch r := rand.IntN(20); {
			case ls.Robots && strings.HasPrefix(ls.URL, "http://h0.test/"):
				o.Status, o.Body = 200, []byte("User-agent: *\nDisallow: /private\n")
			case ls.Robots:
				o.Status = 404
			case r == 0:
				continue // abandoned
			case r == 1:
				o.Status = 500
			case r == 2:
				o.Status, o.RetryAfter = 503, 10*time.Millisecond
			case r == 3:
				o.Status = 404
			default:
				o.Status = 200
				if m.Header.Get(msg.HeaderOutcomeLinks) == "1" {
					// The page links to itself (a duplicate) and to a
					// page no batch has carried yet. (Drawn from the
					// batches' IDs: other new keys would change the
					// filter's false positives, which this test cannot
					// tell from lost URLs.)
					l.outcomeLinks.Add(1)
					o.Links = &msg.LinkBatch{Source: ls.URL, Depth: ls.Depth, Links: []msg.Link{
						{URL: ls.URL, Kind: 1}, {URL: pageURL(int(l.next.Add(1) - 1)), Kind: 1}}}
				}
			}
			if batching {
				batch = append(batch, &o)
				continue
			}
			l.report(ctx, rep.Shard, &o)
		}
		if len(batch) > 0 {
			l.report(ctx, rep.Shard, batch...)
		}
	}, nil)
}

// report publishes outs, one outcome or a batch of them, and notes their
// links as acked once the stream acks the message.
func (l *killLoad) report(ctx context.Context, shard uint32, outs ...*msg.Outcome) {
	var b []byte
	var err error
	if len(outs) == 1 {
		b, err = outs[0].MarshalBinary()
	} else {
		b, err = (&msg.OutcomeBatch{Outcomes: outs}).MarshalBinary()
	}
	if err != nil {
		l.t.Error(err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := l.js.Publish(pctx, l.subj.Done(int(shard)), b); err != nil {
		return
	}
	l.reported.Add(int64(len(outs)))
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range outs {
		if o.Links != nil {
			for _, lk := range o.Links.Links {
				l.acked[lk.URL] = true
			}
		}
	}
}

// check verifies the invariant for every acked URL.
func (l *killLoad) check(st *frontier.State, rounds, folded int) {
	t := l.t
	l.mu.Lock()
	defer l.mu.Unlock()
	states := map[string]int{}
	for u := range l.acked {
		ex, err := st.Explain(u)
		if err != nil {
			t.Fatalf("explain %s: %v", u, err)
		}
		switch ex.State {
		case "queued", "leased", "done":
			if !ex.FilterSeen {
				t.Errorf("%s is %s but the filter does not hold it", u, ex.State)
			}
			states[ex.State+" "+ex.DoneReason]++
		default:
			switch {
			case ex.Rejected != "":
				states["skipped "+ex.Rejected]++
			case ex.HostState != nil && ex.HostState.RobotsAllowed != nil && !*ex.HostState.RobotsAllowed:
				states["skipped robots"]++ // denied at admission: robots.txt was known
			case ex.FilterSeen && ex.AuditSampled && ex.InTruth:
				// The filter said seen, and the exact sample holds the key
				// but no queue does: a false-positive skip, which the audit
				// recorded (its count bounds these below).
				states["skipped filter false positive"]++
			default:
				t.Errorf("%s was acked but is %s and not skipped by any rule: %+v", u, ex.State, ex)
			}
		}
	}
	s := st.Status()
	t.Logf("crawler: %d leases, %d outcomes reported, %d of them with links", l.leases.Load(), l.reported.Load(), l.outcomeLinks.Load())
	t.Logf("%d kill rounds, %d distinct URLs acked: %v; status: admitted %d, duplicates %d, queued %d, leased %d, done %d, rejected %v, outcomes %v",
		rounds, len(l.acked), states, s.Admitted, s.Duplicates, s.Queued, s.Leased, s.Done, s.Rejected, s.Outcomes)
	for i, sf := range s.Filter.Subfilters {
		t.Logf("sub-filter %d: %d of %d items, target fp %g, implied %g", i, sf.Items, sf.Capacity, sf.TargetFP, sf.ImpliedFP)
	}
	// Growth indices the chain went through: a folded oldest sub-filter
	// stands for folded of them.
	if n := len(s.Filter.Subfilters) + max(folded-1, 0); n < 3 {
		t.Errorf("the filter grew through %d sub-filters: the load did not exercise growth", n)
	}
	if states["done fetched"] == 0 || states["done robots"]+states["skipped robots"] == 0 {
		t.Errorf("the load did not exercise fetches and robots denials: %v", states)
	}
	if n := states["skipped filter false positive"]; uint64(n) > s.Audit.FPSkips {
		t.Errorf("%d acked URLs are unknown with their keys in the audit's sample, but the audit counted %d false-positive skips: URLs were lost", n, s.Audit.FPSkips)
	}
	// The filter counts every key it admitted once, kills between the
	// parts of a checkpoint or not (dedup's cut record): the admitted
	// URLs less the false positives the audit rescued (the filter called
	// those seen; no page cap is set, so every new key is admitted).
	if items, want := s.Filter.Items, s.Admitted-s.Audit.Rescued; items != want {
		t.Errorf("the filter counts %d items after %d kill rounds, want %d (admitted %d less %d rescued)", items, rounds, want, s.Admitted, s.Audit.Rescued)
	}
	// Every admitted URL is queued, leased or done, once. Leased also
	// counts robots.txt leases, which admit nothing: hence a range.
	admitted := int64(s.Admitted + s.Audit.Rescued)
	if lo, hi := s.Queued+s.Done, s.Queued+s.Done+s.Leased; admitted < lo || admitted > hi {
		t.Errorf("admitted+rescued = %d, want within queued+done = %d .. queued+done+leased = %d", admitted, lo, hi)
	}
}
