package fetcher

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/parser"
	"github.com/trawlhq/trawl/robots"
)

// WorkerOptions configures a Worker.
type WorkerOptions struct {
	// Config is the crawler section of the configuration: workers,
	// lease_batch, the fetch options, fetch_log and warc_dir.
	Config   config.Crawler
	Subjects msg.Subjects
	// Shards is the number of frontier shards and Canonical the crawl's
	// aggressive canonical rules (scope.canonical, as the frontiers have
	// it): links go to the shard msg.Router{Shards, Canonical} names.
	Shards    int
	Canonical parser.Rule
	Logger    *slog.Logger // nil discards
	// ID names this crawler in lease requests and message IDs; "" means
	// host name and process ID.
	ID string
	// TLSConfig is handed to the Client (nil = system roots).
	TLSConfig *tls.Config
	// MaxPages, when positive, is how many pages (robots.txt aside) the
	// worker fetches in all: it asks for no more leases than that leaves,
	// then idles until ctx ends. The one-command crawl's max_pages.
	MaxPages int64
	// Hurry, when closed after Run's ctx has ended, cancels the fetches
	// still in flight at once instead of after crawler.shutdown_grace
	// (a second Ctrl-C). nil: only the grace period ends them.
	Hurry <-chan struct{}
}

// Worker takes leases from the frontiers and fetches them. See the package
// documentation for the loop.
type Worker struct {
	nc     *nats.Conn
	opts   WorkerOptions
	log    *slog.Logger
	agent  string // robots product token, for <meta name=...>
	stats  workerCounters
	client *httpclient.Client
	pub    *publisher
	seen   *linkCache // links published and acked, per shard (nil: crawler.link_cache 0)
	// outcomes gathers the outcomes waiting for a shard into one message.
	outcomes *outcomeQueue

	// Outputs, opened by Run.
	fetchLog *FetchLog
	archiver *Archiver

	// budget is MaxPages: reserved, settled and given back in budget.go.
	budget pageBudget

	// stopLeasing ends Run's lease loops with a cause; set by Run before
	// it starts any goroutine.
	stopLeasing context.CancelCauseFunc
	// cancelling is set just before the fetches in flight are cancelled
	// (shutdown grace over, second interrupt, archive failure).
	cancelling atomic.Bool
	failed     struct {
		sync.Mutex
		err error // the first archive failure (wraps ErrArchive); it stops the worker
	}
}

// NewWorker checks opts and prepares a worker on nc. Nothing is fetched or
// opened before Run.
func NewWorker(nc *nats.Conn, opts WorkerOptions) (*Worker, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: no NATS connection", ErrConfig)
	}
	if opts.Shards < 1 {
		return nil, fmt.Errorf("%w: shards must be at least 1, got %d", ErrConfig, opts.Shards)
	}
	if opts.Config.Workers < 1 || opts.Config.LeaseBatch < 1 {
		return nil, fmt.Errorf("%w: workers and lease_batch must be at least 1", ErrConfig)
	}
	if opts.Subjects.Prefix == "" {
		opts.Subjects = msg.NewSubjects("")
	}
	if opts.ID == "" {
		opts.ID = ProcessID()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Worker{nc: nc, opts: opts, log: log, agent: robots.ProductToken(opts.Config.UserAgent)}
	w.budget.max = opts.MaxPages
	var archive func(*httpclient.Exchange) error
	if opts.Config.WARCDir != "" {
		archive = func(x *httpclient.Exchange) error {
			if x.Truncated == "time" && w.cancelling.Load() {
				return nil // cut by the shutdown: its lease is given back, not archived
			}
			return w.archiver.Archive(x)
		}
	}
	copts := clientOptions(opts.Config)
	copts.TLSConfig, copts.Archive = opts.TLSConfig, archive
	c, err := httpclient.New(copts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	w.client = c
	w.seen = newLinkCache(opts.Config.LinkCache, opts.Shards)
	w.outcomes = newOutcomeQueue(w.sendOutcomes)
	if w.pub, err = newPublisher(nc, opts.ID, log, &w.stats.publishRetries); err != nil {
		return nil, err
	}
	return w, nil
}

// clientOptions are the HTTP client's options under the crawler section
// of the configuration.
func clientOptions(c config.Crawler) httpclient.Options {
	return httpclient.Options{
		UserAgent: c.UserAgent, MaxBody: int64(c.MaxBody), FetchTimeout: c.FetchTimeout,
		ConnectTimeout: c.ConnectTimeout, TLSTimeout: c.TLSTimeout, HeaderTimeout: c.HeaderTimeout,
		IdlePerHost: c.IdlePerHost, IdleTotal: c.IdleTotal, DNSCacheTTL: c.DNSCacheTTL,
		Resolve: c.Resolve, AllowPrivateNetworks: c.AllowPrivateNetworks,
	}
}

// Stats returns the worker's counters.
func (w *Worker) Stats() WorkerStats { return w.stats.snapshot() }

// Run takes and fetches leases until ctx ends. Then it stops asking for
// leases and lets the fetches in flight finish for up to
// crawler.shutdown_grace (or until Hurry is closed); the fetches still
// running then are cancelled and their leases given back (the frontier
// requeues them without counting an attempt). It waits until everything
// published is acknowledged, for up to flushGrace past the grace (what is
// not acknowledged by then is counted in WorkerStats.Unreported), closes
// its outputs and returns. A page's WARC records and fetch-log line
// are written before its outcome is published; when either cannot be
// written, the lease is given back and Run stops as if ctx had ended,
// cancelling the fetches in flight, and returns an error wrapping
// ErrArchive. Run may be called once. It returns nil after a clean
// shutdown.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.openOutputs(); err != nil {
		return err
	}
	defer w.client.Close()
	leaseCtx, stopLeasing := context.WithCancelCause(ctx)
	defer stopLeasing(nil)
	w.stopLeasing = stopLeasing
	// Fetches outlive ctx by up to shutdown_grace.
	fetchCtx, cancelFetches := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelFetches()
	// Publishing continues after ctx ends, for flushGrace past the grace.
	pubCtx, cancelPub := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPub()
	stopOwned := w.startOwned(leaseCtx, cancelFetches, cancelPub)

	leasers, unsubscribe, err := w.subscribeLeasers()
	defer unsubscribe()
	if err != nil {
		stopOwned()
		w.closeOutputs()
		return err
	}

	p := w.newFetchPool(fetchCtx, pubCtx)

	w.log.Info("crawler worker started", "id", w.opts.ID, "workers", w.opts.Config.Workers, "shards", w.opts.Shards, "agent", w.agent)
	w.takeLeases(leaseCtx, leasers, p)
	w.log.Info("crawler worker stopping: finishing fetches in flight", "in_flight", w.stats.inFlight.Load())
	p.wg.Wait()
	stopOwned()
	return w.finish(w.stats.unreported.Load())
}

// startOwned starts the goroutines Run owns besides the fetches:
// endFetches, and syncOutputs with crawler.archive_sync: interval. stop
// tells them Run is done and waits for them.
func (w *Worker) startOwned(leaseCtx context.Context, cancelFetches, cancelPub context.CancelFunc) (stop func()) {
	runDone := make(chan struct{})
	var owned sync.WaitGroup
	owned.Go(func() { w.endFetches(leaseCtx, runDone, cancelFetches, cancelPub) })
	if w.opts.Config.ArchiveSync == config.ArchiveSyncInterval {
		owned.Go(func() { w.syncOutputs(runDone) })
	}
	return func() { close(runDone); owned.Wait() }
}
