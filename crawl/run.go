package crawl

import (
	"context"
	"errors"
	"fmt"
	"github.com/trawlhq/trawl/frontier/service"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// Options configures Run.
type Options struct {
	// Config is the whole configuration; Crawl.Seeds are the seeds. The
	// frontier runs as shard 0 of 1 whatever frontier.shard(s) say.
	Config config.Config
	Logger *slog.Logger // nil discards
	// Progress receives the progress line (nil: none). Terminal redraws it
	// in place about once a second; otherwise a line is written every
	// LogEvery (default 10 s).
	Progress io.Writer
	Terminal bool
	LogEvery time.Duration
	// Frontier tunes the in-process frontier service (tests shorten its
	// timers); its Config, Logger and Registry are set by Run.
	Frontier service.Options
	// Registry receives every metric of the crawl (the frontier service's,
	// the shard's status, the worker's) and is what frontier.metrics_addr
	// serves. Default: a new registry.
	Registry *prometheus.Registry
	// Poll is how often the stop conditions are checked (default 100 ms).
	Poll time.Duration
	// Fresh starts the crawl over: the frontier's state file and the NATS
	// store of the data dir are removed first (crawler --fresh). Without
	// it, a data dir whose NATS store holds a crawl but whose state file
	// is missing or empty is refused (service.ErrStateMissing).
	Fresh bool
	// DrainTimeout bounds the wait, after the workers stopped, for the
	// frontier to commit what they published (default 30 s).
	DrainTimeout time.Duration
	// Hurry, closed after ctx ended, cancels the fetches still in flight
	// at once rather than after crawler.shutdown_grace (a second Ctrl-C);
	// their URLs go back to the queue.
	Hurry <-chan struct{}
}

// Run crawls from the seeds until the frontier has nothing queued or
// leased, crawl.max_pages or crawl.max_duration is reached, or ctx is
// cancelled (an interrupted crawl resumes when Run is called again with
// the same data_dir). It returns the summary even when it also returns an
// error, as far as it got.
func Run(ctx context.Context, opts Options) (sum *Summary, err error) {
	cfg := opts.Config
	cfg.Frontier.Shard, cfg.Frontier.Shards = 0, 1
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Poll <= 0 {
		opts.Poll = 100 * time.Millisecond
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 30 * time.Second
	}
	if opts.LogEvery <= 0 {
		opts.LogEvery = 10 * time.Second
	}
	sum = &Summary{Started: time.Now().UTC(), DataDir: cfg.DataDir}
	// Refused before anything starts: seeds that could never be fetched,
	// a data_dir that cannot be written or that another crawl holds.
	if err := CheckSeeds(ctx, cfg); err != nil {
		return sum, err
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return sum, err
	}
	defer unlock()

	statePath, natsDir := frontier.StatePath(cfg), filepath.Join(cfg.DataDir, "nats")
	if opts.Fresh {
		err := os.Remove(statePath)
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		if err = errors.Join(err, os.RemoveAll(natsDir)); err != nil {
			return sum, fmt.Errorf("crawl: starting over: %w", err)
		}
		log.Info("starting the crawl over", "removed", []string{statePath, natsDir})
	}
	stateFile, statErr := os.Stat(statePath)

	emb, err := bus.StartEmbedded(bus.EmbeddedOptions{Dir: natsDir, Listen: cfg.NATS.Expose, Log: log})
	if err != nil {
		return sum, err
	}
	defer emb.Close()
	if cfg.NATS.Expose != "" {
		sum.NATS = emb.ClientURL()
		log.Info("other crawlers can join this crawl", "command", "crawler --nats "+emb.ClientURL()+" --shards 1")
	}
	ncF, err := emb.Connect(ctx, "trawl-frontier", log)
	if err != nil {
		return sum, err
	}
	defer ncF.Close()
	ncW, err := emb.Connect(ctx, "trawl-crawler", log)
	if err != nil {
		return sum, err
	}
	defer ncW.Close()

	st, err := frontier.Open(frontier.Options{Config: cfg, Logger: log})
	if err != nil {
		return sum, err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("crawl: closing the frontier: %w", cerr))
		}
	}()
	fopts := opts.Frontier
	fopts.Config, fopts.Logger = cfg, log
	// One registry gets every metric of the crawl and is the one served.
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	fopts.Registry = reg
	svc, err := service.New(ncF, st, fopts)
	if err != nil {
		return sum, err
	}
	if err := svc.CheckState(ctx); err != nil {
		// Leave the data dir as it was: the file Open just created goes.
		_ = st.Close()
		switch {
		case errors.Is(statErr, os.ErrNotExist):
			_ = os.Remove(statePath)
		case statErr == nil && stateFile.Size() == 0:
			_ = os.Truncate(statePath, 0)
		}
		return sum, fmt.Errorf("crawl: %w. To start the crawl in %s over, run again with --fresh (it removes %s and %s)", err, cfg.DataDir, statePath, natsDir)
	}
	subj := msg.NewSubjects(cfg.NATS.Prefix)
	rt, err := msg.ParseRouter(cfg.Frontier.Shards, cfg.Scope.Canonical)
	if err != nil {
		return sum, err
	}
	js, err := jetstream.New(ncW)
	if err != nil {
		return sum, fmt.Errorf("crawl: %w", err)
	}
	if _, err := bus.EnsureStream(ctx, js, cfg.NATS); err != nil {
		return sum, err
	}

	// The frontier and the workers get contexts of their own: they are
	// stopped in order below, whatever ended the crawl.
	fctx, stopFrontier := context.WithCancel(context.Background())
	front := startTask(fctx, svc.Run)
	// On every return path the service stops before the state closes
	// (deferred earlier, so it runs later).
	defer func() { stopFrontier(); _ = front.Wait() }()
	if cfg.Frontier.MetricsAddr != "" {
		// A taken port is not fatal here: two one-command crawls on one
		// machine would otherwise fight over the default port.
		if wait, err := service.ServeMetrics(fctx, cfg.Frontier.MetricsAddr, svc, reg, log); err != nil {
			log.Warn("metrics and status page disabled", "err", err)
		} else {
			defer func() { stopFrontier(); _ = wait() }()
		}
	}

	if len(cfg.Crawl.Seeds) > 0 {
		res, err := PublishSeeds(ctx, js, subj, rt, cfg.Crawl.Seeds)
		for u, e := range res.Invalid {
			log.Warn("seed skipped", "url", u, "err", e)
		}
		if err != nil {
			return sum, err
		}
	}

	w, err := fetcher.NewWorker(ncW, fetcher.WorkerOptions{Config: cfg.Crawler, Subjects: subj, Shards: rt.Shards, Canonical: rt.Rules, Logger: log, ID: "standalone", MaxPages: cfg.Crawl.MaxPages, Hurry: opts.Hurry})
	if err != nil {
		return sum, err
	}
	if err := reg.Register(w.Collector()); err != nil { // trawl_crawler_* beside the frontier's metrics
		return sum, fmt.Errorf("crawl: metrics: %w", err)
	}
	wctx, stopWorkers := context.WithCancel(context.Background())
	work := startTask(wctx, w.Run)
	defer func() { stopWorkers(); _ = work.Wait() }()

	prog := &progress{w: opts.Progress, terminal: opts.Terminal, logEvery: opts.LogEvery, start: time.Now()}
	limit := newHostLimit(cfg)
	snap := func() Snapshot {
		ws := w.Stats()
		s := Snapshot{At: time.Now(), Frontier: svc.Status(), Fetched: ws.Fetched - ws.Robots, Errors: ws.Errors}
		limit.observe(s)
		return s
	}
	reason, runErr := watch(ctx, cfg.Crawl, opts, snap, prog, front, work)
	prog.finish()

	// Stop in order: workers finish or release what they hold and flush
	// their publishes; the frontier commits what they published, then
	// checkpoints; NATS goes last (deferred).
	stopWorkers()
	if e := work.Wait(); e != nil && !errors.Is(e, context.Canceled) && !errors.Is(runErr, errWorker) {
		runErr = errors.Join(runErr, fmt.Errorf("crawl: %w", e))
	}
	if runErr == nil || errors.Is(runErr, errWorker) {
		// After a worker failure too: the leases it gave back are
		// requeued before the state is closed.
		drain(svc, opts.DrainTimeout, opts.Poll)
	}
	final := svc.Status()
	stopFrontier()
	if e := front.Wait(); e != nil && !errors.Is(e, context.Canceled) && !errors.Is(runErr, errFrontier) {
		runErr = errors.Join(runErr, fmt.Errorf("crawl: %w", e))
	}
	ws := w.Stats()
	sum.Finished = time.Now().UTC()
	sum.Seconds = sum.Finished.Sub(sum.Started).Seconds()
	sum.StopReason = reason
	sum.Fetched = ws.Fetched - ws.Robots
	sum.Errors = ws.Errors
	sum.Sitemaps = ws.Sitemaps
	if sum.Seconds > 0 {
		sum.PagesPerSecond = float64(sum.Fetched) / sum.Seconds
	}
	sum.Frontier = final
	sum.Hints = limit.hints(cfg.Politeness.MinDelay)
	if runErr == nil && reason == StopDone && sum.Errors > 0 && answered(final) == 0 {
		runErr = fmt.Errorf("%w: %d fetches failed and no server answered one (connection refused, DNS, TLS, or robots.txt unreachable: the fetch log and the status page have each one's reason)", ErrNothingFetched, sum.Errors)
	}
	if cfg.Crawl.SummaryJSON != "" {
		if e := sum.WriteJSON(cfg.Crawl.SummaryJSON); e != nil {
			runErr = errors.Join(runErr, e)
		}
	}
	return sum, runErr
}

var (
	errWorker   = errors.New("crawl: the fetch workers stopped")
	errFrontier = errors.New("crawl: the frontier stopped")
)

// watch polls until a stop condition holds and returns its reason.
func watch(ctx context.Context, c config.Crawl, opts Options, snap func() Snapshot, prog *progress, front, work *task) (string, error) {
	poll := time.NewTicker(opts.Poll)
	defer poll.Stop()
	start := time.Now()
	lastProgress := time.Time{}
	idleStreak := 0
	for {
		select {
		case <-ctx.Done():
			prog.update(snap())
			return StopInterrupted, nil
		case <-front.done:
			return "failed", fmt.Errorf("%w: %w", errFrontier, front.Wait())
		case <-work.done:
			return "failed", fmt.Errorf("%w: %w", errWorker, work.Wait())
		case <-poll.C:
		}
		s := snap()
		if s.At.Sub(lastProgress) >= c.Progress {
			lastProgress = s.At
			prog.update(s)
		}
		switch {
		case c.MaxPages > 0 && int64(s.Fetched) >= c.MaxPages:
			prog.update(s)
			return StopMaxPages, nil
		case c.MaxDuration > 0 && time.Since(start) >= c.MaxDuration:
			prog.update(s)
			return StopMaxDuration, nil
		}
		// Idle twice in a row, a poll apart: a link batch published between
		// two status reads shows up as pending in the second.
		if idle(s.Frontier) {
			idleStreak++
		} else {
			idleStreak = 0
		}
		if idleStreak >= 2 {
			prog.update(s)
			return StopDone, nil
		}
	}
}

// drain waits until the frontier has committed every message in the
// stream, or timeout.
func drain(svc *service.Server, timeout, poll time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if svc.Status().Pending == 0 {
			return
		}
		time.Sleep(poll)
	}
}

// answered counts the outcomes of the crawl that got an HTTP response.
func answered(st msg.Status) uint64 {
	var n uint64
	for class, c := range st.Outcomes {
		if class != "error" {
			n += c
		}
	}
	return n
}
