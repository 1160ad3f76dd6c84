package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/fetcher"
	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/service"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/frontierclient"
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
	// Poll is how often the stop conditions are checked (default 25 ms:
	// a crawl that is over ends within two polls).
	Poll time.Duration
	// Fresh starts the crawl over: the frontier's state file and the NATS
	// store of the data dir are removed first (crawler --fresh). Without
	// it, a data dir whose NATS store holds a crawl but whose state file
	// is missing or empty is refused (service.ErrStateMissing).
	Fresh bool
	// DrainTimeout bounds the wait, after the workers stopped, for the
	// frontier to commit what they published (default 30 s); the wait
	// also ends shutdownSlack past crawler.shutdown_grace after the stop
	// began, whatever the bus does.
	DrainTimeout time.Duration
	// Hurry, closed after ctx ended, cancels the fetches still in flight
	// at once rather than after crawler.shutdown_grace (a second Ctrl-C);
	// their URLs go back to the queue.
	Hurry <-chan struct{}

	// onBus, when set (by tests), is given the embedded server once it
	// runs.
	onBus func(*bus.Embedded)
}

// Run crawls from the seeds until the frontier has nothing queued or
// leased, crawl.max_pages or crawl.max_duration is reached, or ctx is
// cancelled (an interrupted crawl resumes when Run is called again with
// the same data_dir). In continuous mode (crawl.mode) the first condition
// never holds: finished URLs come due again, revisits count towards
// max_pages, and the crawl runs until one of the others. It returns the summary even when it also returns an
// error, as far as it got.
func Run(ctx context.Context, opts Options) (sum *Summary, err error) {
	opts = opts.withDefaults()
	cfg, log := opts.Config, opts.Logger
	sum = &Summary{Started: time.Now().UTC(), DataDir: cfg.DataDir}
	// Refused before anything starts: seeds that could never be fetched,
	// a data_dir that cannot be written or that another crawl holds.
	if err := CheckSeeds(ctx, cfg.Crawl.Seeds, cfg); err != nil {
		return sum, err
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return sum, err
	}
	defer unlock()

	files := dataFiles(cfg)
	if opts.Fresh {
		if err := files.startOver(log); err != nil {
			return sum, err
		}
	}
	files.statBefore()

	emb, ncF, ncW, err := startNATS(ctx, cfg, files, log)
	if err != nil {
		return sum, diskFull(err, nil, files)
	}
	defer func() { ncW.Close(); ncF.Close(); emb.Close() }()
	if opts.onBus != nil {
		opts.onBus(emb)
	}
	if cfg.NATS.Expose != "" {
		sum.NATS = emb.ClientURL()
		announceJoin(opts, emb)
	}

	// One registry gets every metric of the crawl and is the one served.
	reg := opts.Registry
	st, svc, err := openFrontier(ctx, opts, ncF, reg, files)
	if err != nil {
		return sum, err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("crawl: closing the frontier: %w", cerr))
		}
	}()
	wside, err := newWorkerSide(ctx, cfg, ncW)
	if err != nil {
		return sum, diskFull(err, emb, files)
	}

	// The frontier and the workers get contexts of their own: they are
	// stopped in order below, whatever ended the crawl.
	fctx, stopFrontier := context.WithCancel(context.Background())
	front := startTask(fctx, svc.Run)
	// On every return path the service stops before the state closes
	// (deferred earlier, so it runs later).
	defer func() { stopFrontier(); _ = front.Wait() }()
	if wait := serveStatus(fctx, cfg, svc, reg, log); wait != nil {
		defer func() { stopFrontier(); _ = wait() }()
	}
	w, err := wside.seedAndWorker(ctx, opts, ncW, reg)
	if err != nil {
		return sum, err
	}
	wctx, stopWorkers := context.WithCancel(context.Background())
	work := startTask(wctx, w.Run)
	defer func() { stopWorkers(); _ = work.Wait() }()

	prog := &progress{w: opts.Progress, terminal: opts.Terminal, logEvery: opts.LogEvery, start: time.Now()}
	limit := newHostLimit(cfg)
	snap, last := snapshots(w, svc, limit)
	reason, runErr := watch(ctx, cfg.Crawl, opts, snap, prog, front, work, emb.Failed())
	prog.finish()

	// Stop in order: workers finish or release what they hold and flush
	// their publishes; the frontier commits what they published, then
	// checkpoints; NATS goes last (deferred).
	final, runErr := stopInOrder(opts, svc, runErr, work, stopWorkers, front, stopFrontier, emb)
	if emb.Err() != nil {
		// The frontier's status asks JetStream for the backlog and waits
		// 2 s for an answer that will not come: the last one read stands.
		final = last().Frontier
	}
	sum.finish(reason, w.Stats(), final, limit.hints(cfg.Politeness.MinDelay))
	return sum, sum.conclude(cfg.Crawl.SummaryJSON, diskFull(runErr, emb, files))
}

// diskFull names the full disk in runErr, when one stopped the crawl:
// the NATS store's failure (bus.ErrStoreFull, or bus.ErrStoreFailed for
// another failure), or a write to the state file that found no space
// (ENOSPC).
// Nothing is lost then: what was committed or stored stays, and the same
// command resumes once there is room.
// emb is nil when the server did not start.
func diskFull(runErr error, emb *bus.Embedded, files *crawlFiles) error {
	const resume = "nothing is lost: make room there and run the same command again to resume"
	var storeErr error
	if emb != nil {
		storeErr = emb.Err()
	}
	switch err := storeErr; {
	case errors.Is(err, bus.ErrStoreFull):
		return errors.Join(fmt.Errorf("crawl: %w; %s", err, resume), runErr)
	case err != nil:
		return errors.Join(fmt.Errorf("crawl: %w; what it stored is kept: run the same command again to resume", err), runErr)
	case errors.Is(runErr, bus.ErrStoreFull): // found full at the start
		return fmt.Errorf("crawl: %s is full; %s: %w", files.nats, resume, runErr)
	case errors.Is(runErr, syscall.ENOSPC) && !errors.Is(runErr, fetcher.ErrArchive):
		// A full archive names its own file (fetcher.ErrArchive).
		return fmt.Errorf("crawl: %s is full (%v); %s: %w", filepath.Dir(files.state), syscall.ENOSPC, resume, runErr)
	}
	return runErr
}

// conclude turns a crawl that ended with failures and not one HTTP answer
// into ErrNothingFetched, and writes the summary to path when set.
func (s *Summary) conclude(path string, runErr error) error {
	if runErr == nil && s.StopReason == StopDone && s.Errors > 0 && answered(s.Frontier) == 0 {
		runErr = fmt.Errorf("%w: %d fetches failed and no server answered one (connection refused, DNS, TLS, or robots.txt unreachable: the fetch log and the status page have each one's reason)", ErrNothingFetched, s.Errors)
	}
	if path != "" {
		if e := s.WriteJSON(path); e != nil {
			runErr = errors.Join(runErr, e)
		}
	}
	return runErr
}

// withDefaults fills Options' zero fields and pins the one shard.
func (o Options) withDefaults() Options {
	o.Config.Frontier.Shard, o.Config.Frontier.Shards = 0, 1
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Poll <= 0 {
		o.Poll = 25 * time.Millisecond
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.LogEvery <= 0 {
		o.LogEvery = 10 * time.Second
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	return o
}

// crawlFiles are the one-command crawl's files in data_dir, and what the
// state file was before Run opened it.
type crawlFiles struct {
	dataDir, state, nats string
	before               os.FileInfo
	beforeErr            error
}

func dataFiles(cfg config.Config) *crawlFiles {
	return &crawlFiles{dataDir: cfg.DataDir, state: frontier.StatePath(cfg), nats: filepath.Join(cfg.DataDir, "nats")}
}

// startOver removes the state file and the NATS store (--fresh).
func (f *crawlFiles) startOver(log *slog.Logger) error {
	err := os.Remove(f.state)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if err = errors.Join(err, os.RemoveAll(f.nats)); err != nil {
		return fmt.Errorf("crawl: starting over: %w", err)
	}
	log.Info("starting the crawl over", "removed", []string{f.state, f.nats})
	return nil
}

func (f *crawlFiles) statBefore() { f.before, f.beforeErr = os.Stat(f.state) }

// restoreState leaves the state file as Run found it: a file Open just
// created goes, one that was empty is emptied again.
func (f *crawlFiles) restoreState() {
	switch {
	case errors.Is(f.beforeErr, os.ErrNotExist):
		_ = os.Remove(f.state)
	case f.beforeErr == nil && f.before.Size() == 0:
		_ = os.Truncate(f.state, 0)
	}
}

// openFrontier opens the shard's state and its service (not running),
// and checks that the state file is the one the stream's consumer served;
// if not, it closes the state, leaves the file as it was and names --fresh.
func openFrontier(ctx context.Context, opts Options, nc *nats.Conn, reg *prometheus.Registry, files *crawlFiles) (*frontier.State, *service.Server, error) {
	cfg, log := opts.Config, opts.Logger
	st, err := frontier.Open(frontier.Options{Config: cfg, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	fopts := opts.Frontier
	fopts.Config, fopts.Logger, fopts.Registry = cfg, log, reg
	svc, err := service.New(nc, st, fopts)
	if err == nil {
		err = svc.CheckState(ctx)
		if err != nil {
			err = fmt.Errorf("crawl: %w. To start the crawl in %s over, run again with --fresh (it removes %s and %s)", err, files.dataDir, files.state, files.nats)
		}
	}
	if err != nil {
		_ = st.Close()
		files.restoreState()
		return nil, nil, err
	}
	return st, svc, nil
}

var (
	errWorker   = errors.New("crawl: the fetch workers stopped")
	errFrontier = errors.New("crawl: the frontier stopped")
)

// watch polls until a stop condition holds and returns its reason;
// storeFailed closed (the embedded NATS store failed) is one.
func watch(ctx context.Context, c config.Crawl, opts Options, snap func() Snapshot, prog *progress, front, work *task, storeFailed <-chan struct{}) (string, error) {
	poll := time.NewTicker(opts.Poll)
	defer poll.Stop()
	start := time.Now()
	lastProgress := time.Time{}
	idleStreak := 0
	for {
		select {
		case <-ctx.Done():
			select {
			case <-storeFailed: // a snapshot would wait for JetStream
			default:
				prog.update(snap())
			}
			return StopInterrupted, nil
		case <-front.done:
			return "failed", fmt.Errorf("%w: %w", errFrontier, front.Wait())
		case <-work.done:
			return "failed", fmt.Errorf("%w: %w", errWorker, work.Wait())
		case <-storeFailed:
			return "failed", nil // diskFull names it
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
		// two status reads shows up as pending in the second. A continuous
		// crawl is never done: an idle frontier waits for its next due URL.
		if idle(s.Frontier) && !c.Continuous() {
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
// stream, or deadline.
func drain(svc *service.Server, deadline time.Time, poll time.Duration) {
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

// workerSide is the one-command crawl's fetching half: the frontier
// client that seeds, the subjects and the shard router.
type workerSide struct {
	fc   *frontierclient.Client
	subj msg.Subjects
	rt   msg.Router
}

func newWorkerSide(ctx context.Context, cfg config.Config, nc *nats.Conn) (*workerSide, error) {
	rt, err := msg.ParseRouter(cfg.Frontier.Shards, cfg.Scope.Canonical)
	if err != nil {
		return nil, err
	}
	subj := msg.NewSubjects(cfg.NATS.Prefix)
	fc, err := frontierclient.New(nc, subj) // the stream is declared (startNATS)
	if err != nil {
		return nil, err
	}
	return &workerSide{fc: fc, subj: subj, rt: rt}, nil
}

// seedAndWorker publishes the seeds and builds the fetch worker, its
// metrics registered in reg.
func (ws *workerSide) seedAndWorker(ctx context.Context, opts Options, nc *nats.Conn, reg *prometheus.Registry) (*fetcher.Worker, error) {
	cfg, log := opts.Config, opts.Logger
	if len(cfg.Crawl.Seeds) > 0 {
		res, err := ws.fc.PublishSeeds(ctx, ws.rt, cfg.Crawl.Seeds)
		for u, e := range res.Invalid {
			log.Warn("seed skipped", "url", u, "err", e)
		}
		if err != nil {
			return nil, err
		}
	}
	w, err := fetcher.NewWorker(nc, fetcher.WorkerOptions{Config: cfg.FetcherConfig(), Subjects: ws.subj, Shards: ws.rt.Shards, Canonical: ws.rt.Rules, Logger: log, ID: "standalone", MaxPages: cfg.Crawl.MaxPages, Hurry: opts.Hurry})
	if err != nil {
		return nil, err
	}
	if err := reg.Register(w.Collector()); err != nil { // trawl_crawler_* beside the frontier's metrics
		return nil, fmt.Errorf("crawl: metrics: %w", err)
	}
	return w, nil
}

// serveStatus serves reg and the status page on frontier.metrics_addr
// until ctx ends; it returns the server's wait, or nil when there is none.
// A taken port is not fatal here: two one-command crawls on one machine
// would otherwise fight over the default port.
func serveStatus(ctx context.Context, cfg config.Config, svc *service.Server, reg *prometheus.Registry, log *slog.Logger) (wait func() error) {
	if cfg.Frontier.MetricsAddr == "" {
		return nil
	}
	wait, err := service.ServeMetrics(ctx, cfg.Frontier.MetricsAddr, svc, reg, log)
	if err != nil {
		log.Warn("metrics and status page disabled", "err", err)
		return nil
	}
	return wait
}

// startNATS starts the embedded nats-server (its store in data_dir, on
// nats.expose when set, users in UsersFile), connects the frontier's and
// the workers' clients as their roles' users and declares the stream. On
// error nothing is left running.
func startNATS(ctx context.Context, cfg config.Config, files *crawlFiles, log *slog.Logger) (emb *bus.Embedded, ncF, ncW *nats.Conn, err error) {
	if emb, err = startEmbedded(cfg, files, log); err != nil {
		return nil, nil, nil, err
	}
	if ncF, err = emb.ConnectAs(ctx, bus.RoleFrontier, "trawl-frontier", log); err == nil {
		err = declareStream(ctx, cfg, ncF)
	}
	if err != nil {
		if ncF != nil {
			ncF.Close()
		}
		emb.Close()
		return nil, nil, nil, err
	}
	if ncW, err = emb.ConnectAs(ctx, bus.RoleCrawler, "trawl-crawler", log); err != nil {
		ncF.Close()
		emb.Close()
		return nil, nil, nil, err
	}
	return emb, ncF, ncW, nil
}

// shutdownSlack is how long past crawler.shutdown_grace the stop of a
// crawl may take: the workers' flushGrace (3 s) for their last
// publishes, then the frontier's commit of what they published.
const shutdownSlack = 5 * time.Second

// stopInOrder ends a crawl whatever ended it: the workers finish or
// release what they hold and flush their publishes; the frontier drains
// what they published (after a worker failure too: the leases it gave
// back are requeued before the state closes), then stops. The drain ends
// shutdown_grace + shutdownSlack after the stop began (or after
// DrainTimeout, if sooner), and is skipped once the NATS store failed:
// the workers give up on their publishes within that time too, so the
// stop keeps to it whatever the bus does (what is not committed then is
// redelivered, or its leases expire, in the next run). It returns the
// frontier's final status and runErr joined with what stopping found.
func stopInOrder(opts Options, svc *service.Server, runErr error, work *task, stopWorkers func(), front *task, stopFrontier func(), emb *bus.Embedded) (msg.Status, error) {
	deadline := time.Now().Add(opts.Config.Crawler.ShutdownGrace + shutdownSlack)
	stopWorkers()
	if e := work.Wait(); e != nil && !errors.Is(e, context.Canceled) && !errors.Is(runErr, errWorker) {
		runErr = errors.Join(runErr, fmt.Errorf("crawl: %w", e))
	}
	if (runErr == nil || errors.Is(runErr, errWorker)) && emb.Err() == nil {
		if by := time.Now().Add(opts.DrainTimeout); by.Before(deadline) {
			deadline = by
		}
		drain(svc, deadline, opts.Poll)
	}
	var final msg.Status
	if emb.Err() == nil {
		final = svc.Status()
	}
	stopFrontier()
	if e := front.Wait(); e != nil && !errors.Is(e, context.Canceled) && !errors.Is(runErr, errFrontier) {
		runErr = errors.Join(runErr, fmt.Errorf("crawl: %w", e))
	}
	return final, runErr
}

// snapshots returns the watcher's view of the crawl, which also feeds the
// per-host limit's hint, and the last snapshot it took (read it once
// the watcher is done).
func snapshots(w *fetcher.Worker, svc *service.Server, limit *hostLimit) (snap, last func() Snapshot) {
	var prev Snapshot
	return func() Snapshot {
		ws := w.Stats()
		s := Snapshot{At: time.Now(), Frontier: svc.Status(), Fetched: ws.Fetched - ws.Robots, Errors: ws.Errors}
		limit.observe(s)
		prev = s
		return s
	}, func() Snapshot { return prev }
}
