package fetcher

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/fetcher/httpclient"
	"github.com/trawlhq/trawl/fetcher/warc"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/parser"
	"github.com/trawlhq/trawl/robots"
)

// Worker loop timings.
const (
	leaseRequestTimeout = 2 * time.Second
	// After an empty lease reply the worker waits pollBackoff(streak):
	// 2 ms after the first, doubling with each empty reply in a row up to
	// 250 ms, plus up to a quarter of jitter; a granted lease resets it.
	// Short at first because every millisecond here is a millisecond each
	// ready host waits (with one fetch in flight per host the lease cycle
	// bounds a crawl's speed); growing so that idle workers do not poll a
	// frontier that has nothing to give.
	pollBackoffMin = 2 * time.Millisecond
	pollBackoffMax = 250 * time.Millisecond
	// flushGrace is how long, once shutdown_grace is over, Run keeps
	// trying to publish the results of the fetches that finished and the
	// leases it gives back; then it stops, counting what is left as
	// unreported (WorkerStats.Unreported: their leases expire and the
	// URLs are fetched again). Run thus returns within shutdown_grace and
	// flushGrace of ctx's end, whatever JetStream does. Before, a
	// JetStream that stopped answering held it for fetch_timeout + 30 s.
	flushGrace = 3 * time.Second
	// archiveSyncEvery is how often crawler.archive_sync: interval fsyncs
	// the WARC file and the fetch log.
	archiveSyncEvery = time.Second
	// maxErrorLen and maxContentTypeLen keep server-controlled strings in
	// an outcome short.
	maxErrorLen       = 1024
	maxContentTypeLen = 256
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
		host, _ := os.Hostname()
		opts.ID = fmt.Sprintf("%s/%d", host, os.Getpid())
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

// subscribeLeasers makes the lease loops' leasers, subscribes their
// inboxes, then subscribes to Wake for them all. unsubscribe undoes
// whatever was subscribed, in reverse order; it is never nil, not even
// with an error.
func (w *Worker) subscribeLeasers() (leasers []*leaser, unsubscribe func(), err error) {
	var subs []*nats.Subscription
	unsubscribe = func() {
		for _, sub := range slices.Backward(subs) {
			sub.Unsubscribe()
		}
	}
	leasers = make([]*leaser, leaseLoops(w.opts.Config.Workers))
	for i := range leasers {
		l := &leaser{inbox: w.nc.NewInbox(), replies: make(chan *nats.Msg, 64), wake: make(chan struct{}, 1)}
		sub, err := w.nc.ChanSubscribe(l.inbox, l.replies)
		if err != nil {
			return nil, unsubscribe, fmt.Errorf("fetcher: lease inbox: %w", err)
		}
		subs = append(subs, sub)
		leasers[i] = l
	}
	// A frontier that answered empty says on Wake when work is ready, so
	// an empty-poll backoff ends at once instead of at its timer.
	wsub, err := w.nc.Subscribe(w.opts.Subjects.Wake(), func(*nats.Msg) {
		for _, l := range leasers {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		return nil, unsubscribe, fmt.Errorf("fetcher: wake subscription: %w", err)
	}
	subs = append(subs, wsub)
	return leasers, unsubscribe, nil
}

// takeLeases runs the lease loops, which start the leases they get in p,
// until ctx ends; then it starts the leases that replies coming late
// grant, for up to leaseRequestTimeout.
func (w *Worker) takeLeases(ctx context.Context, leasers []*leaser, p *fetchPool) {
	var loops sync.WaitGroup
	for _, l := range leasers {
		loops.Go(func() { w.leaseLoop(ctx, l, p.slots, p.start) })
	}
	loops.Wait()
	// Requests that timed out may still be answered: their leases are
	// fetched too rather than left to expire (lease_timeout).
	drainBy := time.Now().Add(leaseRequestTimeout)
	for _, l := range leasers {
		w.drainReplies(l, drainBy, p.slots, p.start)
	}
}

// finish closes the outputs and returns Run's error: the close error,
// joined with the archive failure that stopped the worker and with how
// many lease results were not published.
func (w *Worker) finish(unpublished uint64) error {
	err := w.closeOutputs()
	if f := w.failure(); f != nil {
		err = errors.Join(fmt.Errorf("%w (the crawler stopped; the leases it could not archive went back to the frontier, to be fetched when it runs again)", f), err)
	}
	if unpublished > 0 {
		err = errors.Join(err, fmt.Errorf("fetcher: %d lease results were not acknowledged by JetStream; their leases will expire and be fetched again", unpublished))
	}
	return err
}

// fetchPool runs each lease in a goroutine of its own. A lease holds a
// fetch slot until its page is fetched and parsed, then a publish slot
// until JetStream has acked its links and outcome: the acks (two round
// trips) do not hold up the next fetch, and the publish slots bound the
// pages waiting for them.
type fetchPool struct {
	w *Worker
	// fetchCtx outlives Run's ctx by up to shutdown_grace, pubCtx by
	// flushGrace more.
	fetchCtx, pubCtx context.Context
	slots            chan struct{} // fetch slots, taken before start
	pubSlots         chan struct{}
	wg               sync.WaitGroup
}

func (w *Worker) newFetchPool(fetchCtx, pubCtx context.Context) *fetchPool {
	return &fetchPool{
		w: w, fetchCtx: fetchCtx, pubCtx: pubCtx,
		slots:    make(chan struct{}, w.opts.Config.Workers),
		pubSlots: make(chan struct{}, publishSlotsPerWorker*w.opts.Config.Workers),
	}
}

// start handles lease l, granted by is, in a goroutine of its own, in
// the fetch slot its caller took.
func (p *fetchPool) start(is issuer, l msg.Lease) {
	p.wg.Add(1)
	p.w.stats.inFlight.Add(1)
	go func() {
		defer p.wg.Done()
		s := &leaseSlot{p: p, fetching: true}
		defer s.free()
		if err := p.w.handle(p.fetchCtx, p.pubCtx, is, l, s.handoff); err != nil {
			p.w.stats.unreported.Add(1)
			p.w.log.Error("lease result not published", "url", l.URL, "err", err)
		}
	}()
}

// leaseSlot is the slot one lease holds: a fetch slot, then, from
// handoff, a publish slot.
type leaseSlot struct {
	p        *fetchPool
	fetching bool
}

// handoff moves the lease from its fetch slot to a publish slot, once its
// page is fetched and parsed.
func (s *leaseSlot) handoff() {
	s.p.pubSlots <- struct{}{}
	s.fetching = false
	s.p.w.stats.inFlight.Add(-1)
	<-s.p.slots
}

// free gives back the slot the lease holds.
func (s *leaseSlot) free() {
	if s.fetching {
		s.p.w.stats.inFlight.Add(-1)
		<-s.p.slots
		return
	}
	<-s.p.pubSlots
}

// leaser is one lease loop's inbox and wake channel. Lease replies arrive
// on one inbox for the loop's whole life, so a reply that comes after its
// request timed out (a frontier busy committing) is still received and its
// leases fetched. With a per-request inbox such a reply was dropped and its
// hosts stayed blocked until the leases expired (lease_timeout, 2 min).
type leaser struct {
	inbox   string
	replies chan *nats.Msg
	wake    chan struct{}
	// unanswered counts requests sent whose reply has not been taken
	// (a frontier answers every request once, empty when it has nothing).
	// Only the loop's goroutine, then Run, touch it.
	unanswered int
}

// leaseLoops is how many lease requests a worker keeps in flight at once:
// with one, slots freed while a request waited for its reply (a frontier
// committing, about 1.5 ms) stayed idle until the next request; in a local
// 40,000-page crawl 32 fetch slots spent 39% of their time so. One loop
// per 8 fetch slots, at most 4.
func leaseLoops(workers int) int { return min(max(workers/8, 1), 4) }

// leaseLoop asks for leases for free fetch slots and starts them, until
// ctx ends. Several run at once, sharing slots.
func (w *Worker) leaseLoop(ctx context.Context, l *leaser, slots chan struct{}, start func(issuer, msg.Lease)) {
	empties := 0 // empty lease replies in a row
	for {
		// Hold one slot before asking, then as many more as are free, up
		// to lease_batch.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		held := 1
	more:
		for held < w.opts.Config.LeaseBatch {
			select {
			case slots <- struct{}{}:
				held++
			default:
				break more
			}
		}
		reserved := w.budget.reserve(held)
		for ; held > reserved; held-- {
			<-slots
		}
		if held == 0 { // the max_pages budget is spent: wait for the end
			if sleep(ctx, pollBackoffMax) != nil {
				return
			}
			continue
		}
		reply, is, err := w.requestLeases(l, uint32(held))
		if err != nil || len(reply.Leases) == 0 {
			w.budget.settle(reserved, nil)
			for ; held > 0; held-- {
				<-slots
			}
			w.stats.emptyPolls.Add(1)
			if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
				w.log.Debug("lease request failed", "err", err)
			}
			d := pollBackoff(empties)
			empties++
			t := time.NewTimer(d + rand.N(d/4+1))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-l.wake:
				empties = 0
			case <-t.C:
			}
			t.Stop()
			continue
		}
		empties = 0
		w.stats.leases.Add(uint64(len(reply.Leases)))
		w.budget.settle(reserved, reply.Leases)
		for _, ls := range reply.Leases {
			if held > 0 {
				held--
			} else {
				slots <- struct{}{} // a frontier granted more than asked: wait for a slot
			}
			start(is, ls)
		}
		for ; held > 0; held-- {
			<-slots
		}
	}
}

// drainReplies runs after l's loop has stopped: it waits, until by at
// most, for the replies to l's unanswered requests and starts the leases
// they grant, each in a fetch slot, charged to the max_pages budget as the
// loop charges leases it did not ask for.
func (w *Worker) drainReplies(l *leaser, by time.Time, slots chan struct{}, start func(issuer, msg.Lease)) {
	for ; l.unanswered > 0; l.unanswered-- {
		var resp *nats.Msg
		select {
		case resp = <-l.replies:
		case <-time.After(time.Until(by)):
			return // the frontier is gone or the reply was lost
		}
		reply, is, err := w.decodeReply(resp)
		if err != nil || len(reply.Leases) == 0 {
			continue
		}
		w.stats.leases.Add(uint64(len(reply.Leases)))
		w.log.Info("late lease reply at shutdown: fetching its leases", "leases", len(reply.Leases))
		w.budget.settle(0, reply.Leases)
		for _, ls := range reply.Leases {
			slots <- struct{}{}
			start(is, ls)
		}
	}
}

// requestLeases asks the frontiers for up to n leases and returns the next
// reply on the worker's lease inbox: the answer to this request, or a late
// answer to an earlier one (whose leases are just as valid). A reply that
// has already arrived is returned without asking again. The request is not
// tied to Run's ctx: leases granted while shutting down are still fetched.
func (w *Worker) requestLeases(l *leaser, n uint32) (*msg.LeaseReply, issuer, error) {
	var resp *nats.Msg
	select {
	case resp = <-l.replies:
		l.unanswered--
	default:
		req := msg.LeaseRequest{Crawler: w.opts.ID, Max: n}
		data, err := req.MarshalBinary()
		if err != nil {
			return nil, issuer{}, err
		}
		if err := w.nc.PublishRequest(w.opts.Subjects.Work(), l.inbox, data); err != nil {
			return nil, issuer{}, fmt.Errorf("fetcher: lease request: %w", err)
		}
		l.unanswered++
		select {
		case resp = <-l.replies:
			l.unanswered--
		case <-time.After(leaseRequestTimeout):
			return nil, issuer{}, fmt.Errorf("fetcher: lease request: %w", nats.ErrTimeout)
		}
	}
	reply, is, err := w.decodeReply(resp)
	if err != nil {
		w.log.Warn("undecodable lease reply", "err", err)
	}
	return reply, is, err
}

// issuer is what a lease reply says about the frontier shard that
// granted its leases, and so about where and how their results go.
type issuer struct {
	shard uint32
	// outcomeLinks: the shard reads own-shard links inside an outcome
	// (the reply carried msg.HeaderOutcomeLinks). A frontier of an earlier
	// release does not, and gets them as link batches.
	outcomeLinks bool
	// outcomeBatch: the shard reads msg.OutcomeBatch (the reply carried
	// msg.HeaderOutcomeBatch); else each outcome is a message of its own.
	outcomeBatch bool
	// outcomeV4: the shard reads an outcome's Permanent flag and
	// dropped-link counts (msg.HeaderOutcomeV4).
	outcomeV4 bool
	// linksPerPage is the shard's scope.max_links_per_page
	// (msg.HeaderLinksPerPage), the cap on the links taken from a page it
	// leased; 0 when the reply did not say (parser.DefaultMaxLinks).
	linksPerPage int
}

// decodeReply decodes a lease reply and its headers, and passes the
// shard's epoch to the link cache. An empty body is an empty reply.
func (w *Worker) decodeReply(resp *nats.Msg) (*msg.LeaseReply, issuer, error) {
	var reply msg.LeaseReply
	if len(resp.Data) == 0 {
		return &reply, issuer{}, nil
	}
	if err := reply.UnmarshalBinary(resp.Data); err != nil {
		return nil, issuer{}, fmt.Errorf("fetcher: lease reply: %w", err)
	}
	is := issuer{
		shard:        reply.Shard,
		outcomeLinks: resp.Header.Get(msg.HeaderOutcomeLinks) == "1",
		outcomeBatch: resp.Header.Get(msg.HeaderOutcomeBatch) == "1",
		outcomeV4:    resp.Header.Get(msg.HeaderOutcomeV4) == "1",
	}
	if n, err := strconv.Atoi(resp.Header.Get(msg.HeaderLinksPerPage)); err == nil && n > 0 {
		is.linksPerPage = n
	}
	w.seen.observe(reply.Shard, resp.Header)
	return &reply, is, nil
}

// publishSlotsPerWorker is how many pages per fetch slot may wait for
// their publish acks. It bounds the work a killed crawler loses (pages
// fetched but not reported are fetched again) and the outcome latency a
// backed-up stream adds; one is enough to take the acks off the fetch
// path.
const publishSlotsPerWorker = 1

// handle fetches one lease and publishes its links, then its outcome. The
// links that belong to the lease's own shard ride in the outcome when its
// frontier reads them there (is.outcomeLinks) and they fit one batch; the
// others go first, as link batches, acknowledged before the outcome is
// sent. It calls handoff once the page is fetched and parsed, before
// publishing.
func (w *Worker) handle(fetchCtx, pubCtx context.Context, is issuer, l msg.Lease, handoff func()) error {
	shard := is.shard
	if w.dropExpired(l) {
		return nil
	}
	if fetchCtx.Err() != nil || w.failure() != nil {
		return w.release(pubCtx, is, l, msg.ReleaseCancelled)
	}
	r := w.fetch(fetchCtx, l)
	switch {
	case r.ArchiveErr != nil:
		w.fail(fmt.Errorf("%w: %s: %w", ErrArchive, l.URL, r.ArchiveErr))
		return w.release(pubCtx, is, l, msg.ReleaseArchive)
	case r.Err != nil && fetchCtx.Err() != nil:
		return w.release(pubCtx, is, l, msg.ReleaseCancelled)
	}
	w.noticeFetched(shard, l, r)
	out := w.outcome(shard, l, r)
	links, drops := w.links(l, r, is.linksPerPage)
	// Nothing reads the body past here (a robots.txt outcome keeps its
	// own reference): it is garbage while the page waits for its acks, so
	// the pages in publish slots do not hold max_body each.
	r.Body = nil
	handoff()
	rt := route(l.URL, l.Depth, links, w.router(), w.seen)
	if is.outcomeLinks {
		out.Links = rt.take(int(shard))
	}
	if err := w.publishLinks(pubCtx, rt); err != nil {
		return err
	}
	out.LinksFound = uint32(rt.links)
	drops.tooLong += rt.tooLong
	drops.invalid = rt.dropped - rt.tooLong
	w.stats.dropped(drops)
	if is.outcomeV4 {
		// The frontier counts what it will never see; a frontier of an
		// earlier release gets neither this nor Permanent (it retries).
		out.LinksTooLong, out.LinksOverCap, out.LinksInvalid = uint32(drops.tooLong), uint32(drops.overCap), uint32(drops.invalid)
		out.Permanent = r.Status == 0 && errors.Is(r.Err, httpclient.ErrBlocked)
	}
	reported, err := w.publishOutcome(pubCtx, is, l, r, out)
	if reported {
		// The links are in the stream: their frontiers decide them.
		w.seen.add(rt.remember, l.Depth+1)
	}
	return err
}

// noticeFetched tells lease l's frontier on core NATS that the request
// is over (msg.Fetched), when the response is one the frontier applies no
// back-off for (not 429, 503, another 5xx or a transport error): the
// host's politeness slot is freed now rather than once the outcome has
// gone through the stream and a group commit, about 10 ms later. A
// notice that is lost only leaves the slot to the outcome.
func (w *Worker) noticeFetched(shard uint32, l msg.Lease, r *httpclient.Response) {
	if l.Robots || r.Err != nil || r.Status == 0 || r.Status == 429 || r.Status >= 500 {
		return
	}
	n := msg.Fetched{Shard: shard, LeaseID: l.ID, Total: r.Timings.Total}
	data, err := n.MarshalBinary()
	if err == nil {
		err = w.nc.Publish(w.opts.Subjects.Fetched(int(shard)), data)
	}
	if err != nil {
		w.log.Debug("fetched notice not sent; the outcome frees the host's slot", "url", l.URL, "err", err)
	}
}

// dropExpired reports whether lease l's deadline passed before its fetch;
// such a lease is not fetched, and its page goes back to the max_pages
// budget.
func (w *Worker) dropExpired(l msg.Lease) bool {
	if l.Deadline.IsZero() || !time.Now().After(l.Deadline) {
		return false
	}
	w.stats.expired.Add(1)
	w.budget.giveBack(l)
	w.log.Debug("lease expired before its fetch", "url", l.URL, "deadline", l.Deadline)
	return true
}

// fetch fetches lease l, by the lease's deadline when it has one.
func (w *Worker) fetch(ctx context.Context, l msg.Lease) *httpclient.Response {
	if !l.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, l.Deadline)
		defer cancel()
	}
	if l.Robots {
		return w.client.FetchRobots(ctx, l.URL)
	}
	return w.client.Fetch(ctx, l.URL)
}

// linkDrops counts the links of one page dropped before routing, by
// reason: the frontier that leased the page counts them (msg.Outcome's
// LinksTooLong, LinksOverCap, LinksInvalid).
type linkDrops struct{ tooLong, overCap, invalid int }

// links returns the links a fetched page gives the frontiers: a
// robots.txt's sitemaps, a redirect's target, an HTML page's links (at
// most maxLinks; 0: parser.DefaultMaxLinks) or a sitemap's URLs (sitemaps
// only with crawler.sitemaps), and the links it dropped.
func (w *Worker) links(l msg.Lease, r *httpclient.Response, maxLinks int) ([]msg.Link, linkDrops) {
	switch {
	case l.Robots:
		if w.opts.Config.Sitemaps && r.Status >= 200 && r.Status <= 299 {
			return robotsSitemaps(r), linkDrops{}
		}
	case r.Status >= 300 && r.Status <= 399 && r.Redirect != "":
		// The hop count travels with the link, is stored with the queued
		// URL and comes back in its lease: the frontier caps the chain.
		return []msg.Link{{URL: r.Redirect, Kind: uint8(parser.KindRedirect), Hops: l.Hops + 1}}, linkDrops{}
	case r.Status >= 200 && r.Status <= 299 && r.HTML:
		return w.extract(r, l, maxLinks)
	case r.Status >= 200 && r.Status <= 299 && r.XML && w.opts.Config.Sitemaps:
		return w.extractSitemap(r, l), linkDrops{}
	}
	return nil, linkDrops{}
}

// publishLinks publishes a page's routed link batches to the shards that
// own them and waits for their acks. The links rt.take took out travel in
// the outcome instead; they count as published once it is acked.
func (w *Worker) publishLinks(pubCtx context.Context, rt routed) error {
	var msgs []*nats.Msg
	for _, s := range rt.shards {
		for _, b := range rt.batches[s] {
			data, err := b.MarshalBinary()
			if err != nil {
				return fmt.Errorf("fetcher: encode link batch: %w", err)
			}
			msgs = append(msgs, w.pub.message(w.opts.Subjects.Links(s), data))
		}
	}
	if err := w.pub.send(pubCtx, msgs...); err != nil {
		return err
	}
	w.stats.batches.Add(uint64(len(msgs)))
	w.stats.linksPublished.Add(uint64(rt.links - rt.taken - rt.skipped))
	w.stats.linksSkipped.Add(uint64(rt.skipped))
	return nil
}

// publishOutcome writes the fetch log line of lease l, then publishes its
// outcome; reported says it was acked. A log line that cannot be written
// stops the worker, and the lease is given back instead (its outcome, and
// the links it carried, are not sent).
func (w *Worker) publishOutcome(pubCtx context.Context, is issuer, l msg.Lease, r *httpclient.Response, out *msg.Outcome) (reported bool, err error) {
	// The log line is in its file before the outcome is published: a page
	// the frontier records as done is in the log, kill -9 or not.
	if err := w.logFetch(l, r, out); err != nil {
		w.fail(fmt.Errorf("%w: %w", ErrArchive, err))
		return false, w.release(pubCtx, is, l, msg.ReleaseArchive)
	}
	if err := w.sendOutcome(pubCtx, is, out); err != nil {
		return false, err
	}
	w.stats.outcomes.Add(1)
	if out.Links != nil {
		w.stats.linksPublished.Add(uint64(len(out.Links.Links)))
		w.stats.linksInOutcomes.Add(uint64(len(out.Links.Links)))
	}
	w.count(l, r, out)
	return true, nil
}

// release gives lease l back to its frontier unfetched (or fetched but
// not archived): the URL is requeued without counting an attempt.
func (w *Worker) release(pubCtx context.Context, is issuer, l msg.Lease, why msg.Release) error {
	w.budget.giveBack(l)
	out := &msg.Outcome{LeaseID: l.ID, Shard: is.shard, URL: l.URL, Robots: l.Robots, Release: why}
	if err := w.sendOutcome(pubCtx, is, out); err != nil {
		return err
	}
	w.stats.released.Add(1)
	w.log.Debug("lease given back", "url", l.URL, "reason", why)
	return nil
}

// sendOutcome publishes out to its shard's frontier and waits for the
// ack: through the outcome queue, with the other outcomes waiting for
// that shard, when the shard reads outcome batches (is.outcomeBatch).
func (w *Worker) sendOutcome(pubCtx context.Context, is issuer, out *msg.Outcome) error {
	data, err := out.MarshalBinary()
	if err != nil {
		return fmt.Errorf("fetcher: encode outcome: %w", err)
	}
	if is.outcomeBatch {
		return w.outcomes.add(pubCtx, out.Shard, data)
	}
	return w.sendOutcomes(pubCtx, out.Shard, [][]byte{data})
}

// sendOutcomes publishes encoded outcomes of shard in one message, an
// Outcome when there is one, else an OutcomeBatch, and waits for its ack.
func (w *Worker) sendOutcomes(pubCtx context.Context, shard uint32, encoded [][]byte) error {
	data := encoded[0]
	if len(encoded) > 1 {
		var err error
		if data, err = msg.AppendOutcomeBatch(nil, encoded); err != nil {
			return fmt.Errorf("fetcher: encode outcome batch: %w", err)
		}
		w.stats.outcomeBatches.Add(1)
	}
	return w.pub.send(pubCtx, w.pub.message(w.opts.Subjects.Done(int(shard)), data))
}

// fail records the first archive failure and stops the lease loops; the
// fetches in flight are cancelled (endFetches).
func (w *Worker) fail(err error) {
	w.failed.Lock()
	first := w.failed.err == nil
	if first {
		w.failed.err = err
	}
	w.failed.Unlock()
	if first {
		w.log.Error("archive write failed: the crawler stops, and gives back the pages it cannot archive", "err", err)
		w.stopLeasing(err)
	}
}

// failure returns the first archive failure, or nil.
func (w *Worker) failure() error {
	w.failed.Lock()
	defer w.failed.Unlock()
	return w.failed.err
}

// endFetches cancels the fetches in flight when they may run no longer:
// at once after an archive failure; otherwise, once leasing has stopped,
// when shutdown_grace has passed or Hurry is closed. flushGrace after
// the grace (or the archive failure) it cancels the publishes still
// retrying. It returns when Run is done.
func (w *Worker) endFetches(leaseCtx context.Context, runDone <-chan struct{}, cancel, cancelPub context.CancelFunc) {
	select {
	case <-leaseCtx.Done():
	case <-runDone:
		return
	}
	grace := time.NewTimer(w.opts.Config.ShutdownGrace)
	defer grace.Stop()
	if w.failure() == nil {
		select {
		case <-grace.C:
			if n := w.stats.inFlight.Load(); n > 0 {
				w.log.Warn("shutdown grace over: cancelling the fetches in flight; their URLs go back to the queue", "in_flight", n, "grace", w.opts.Config.ShutdownGrace)
			}
		case <-w.opts.Hurry:
			w.log.Warn("cancelling the fetches in flight; their URLs go back to the queue", "in_flight", w.stats.inFlight.Load())
		case <-runDone:
			return
		}
	}
	w.cancelling.Store(true)
	cancel()
	flush := time.NewTimer(flushGrace)
	defer flush.Stop()
	select {
	case <-flush.C:
		w.log.Warn("shutdown: giving up the publishes JetStream has not acknowledged; their leases expire and the URLs are fetched again", "flush_grace", flushGrace)
		cancelPub()
	case <-runDone:
	}
}

// syncOutputs fsyncs the WARC file and the fetch log every
// archiveSyncEvery (crawler.archive_sync: interval) until runDone.
func (w *Worker) syncOutputs(runDone <-chan struct{}) {
	t := time.NewTicker(archiveSyncEvery)
	defer t.Stop()
	for {
		select {
		case <-runDone:
			return
		case <-t.C:
		}
		var errs []error
		if w.archiver != nil {
			errs = append(errs, w.archiver.w.Sync())
		}
		if w.fetchLog != nil {
			errs = append(errs, w.fetchLog.Sync())
		}
		if err := errors.Join(errs...); err != nil {
			w.fail(fmt.Errorf("%w: %w", ErrArchive, err))
			return
		}
	}
}

// outcome fills the Outcome of a fetch, bounding server-controlled strings.
// A robots.txt's outcome carries its body.
func (w *Worker) outcome(shard uint32, l msg.Lease, r *httpclient.Response) *msg.Outcome {
	out := &msg.Outcome{
		LeaseID: l.ID, Shard: shard, URL: l.URL, Robots: l.Robots, Status: r.Status,
		FetchedAt: r.FetchedAt, Timings: msg.Timings(r.Timings), RetryAfter: r.RetryAfter, Bytes: r.Bytes,
		ContentType: clip(r.ContentType, maxContentTypeLen), Truncated: r.Truncated,
	}
	if len(r.Redirect) <= msg.MaxURLLen {
		out.Redirect = r.Redirect
	}
	if r.Err != nil {
		out.Error = clip(r.Err.Error(), maxErrorLen)
	}
	if l.Robots {
		out.Body = r.Body
	}
	return out
}

// extract parses an HTML body for links, at most maxLinks (0: the
// parser's default), and counts those it dropped. Meta robots nofollow
// marks every link NoFollow; the frontier decides what that means.
func (w *Worker) extract(r *httpclient.Response, l msg.Lease, maxLinks int) ([]msg.Link, linkDrops) {
	page, err := parser.Extract(bytes.NewReader(r.Body), r.FinalURL, r.ParserType, parser.ExtractOptions{Agent: w.agent, MaxLinks: maxLinks})
	if err != nil {
		w.log.Warn("page not parsed", "url", l.URL, "err", err)
		return nil, linkDrops{}
	}
	links := make([]msg.Link, len(page.Links))
	for i, pl := range page.Links {
		links[i] = msg.Link{URL: pl.URL, Kind: uint8(pl.Kind), NoFollow: pl.NoFollow || page.NoFollow}
	}
	return links, linkDrops{tooLong: page.TooLong, overCap: page.OverCap}
}

// extractSitemap reads a sitemap, sitemap index or feed for links (all
// navigation: an index's URLs are more sitemaps, read when fetched). XML
// of another kind yields none. A document that broke off keeps the URLs
// read before the break.
func (w *Worker) extractSitemap(r *httpclient.Response, l msg.Lease) []msg.Link {
	sm, err := parser.ParseSitemap(bytes.NewReader(r.Body), r.FinalURL, parser.SitemapOptions{})
	if errors.Is(err, parser.ErrNotSitemap) {
		return nil
	}
	w.stats.sitemaps.Add(1)
	if err != nil {
		w.log.Warn("sitemap not read to its end", "url", l.URL, "urls", len(sm.URLs), "err", err)
	}
	if sm.Truncated {
		w.log.Warn("sitemap over its limits, rest dropped", "url", l.URL, "urls", len(sm.URLs))
	}
	w.log.Debug("sitemap read", "url", l.URL, "format", sm.Format, "urls", len(sm.URLs), "invalid", sm.Invalid)
	return navigationLinks(sm.URLs)
}

// robotsSitemaps returns the Sitemap: URLs of a fetched robots.txt,
// resolved against its URL (after redirects), as navigation links.
func robotsSitemaps(r *httpclient.Response) []msg.Link {
	var urls []string
	for _, v := range robots.Parse(r.Body).Sitemaps() {
		if u, err := parser.Resolve(r.FinalURL, v); err == nil {
			urls = append(urls, u)
		}
	}
	return navigationLinks(urls)
}

func navigationLinks(urls []string) []msg.Link {
	links := make([]msg.Link, len(urls))
	for i, u := range urls {
		links[i] = msg.Link{URL: u, Kind: uint8(parser.KindNavigation)}
	}
	return links
}

// count updates the counters of a fetch whose outcome was published.
func (w *Worker) count(l msg.Lease, r *httpclient.Response, out *msg.Outcome) {
	w.stats.fetched.Add(1)
	if l.Robots {
		w.stats.robots.Add(1)
	}
	w.stats.bytes.Add(uint64(r.Bytes))
	w.stats.status(r.Status)
	if out.Error != "" {
		w.stats.errors.Add(1)
	}
}

// logFetch writes the fetch log line of a fetch (none without a log).
func (w *Worker) logFetch(l msg.Lease, r *httpclient.Response, out *msg.Outcome) error {
	if w.fetchLog == nil {
		return nil
	}
	return w.fetchLog.Write(&LogEntry{
		Time: r.FetchedAt, URL: l.URL, Status: r.Status, Bytes: r.Bytes, ContentType: out.ContentType,
		DurationMS: float64(r.Timings.Total.Microseconds()) / 1000, Depth: l.Depth,
		LinksFound: int(out.LinksFound), Error: out.Error, Truncated: r.Truncated,
	})
}

func (w *Worker) openOutputs() error {
	cfg := w.opts.Config
	always := cfg.ArchiveSync == config.ArchiveSyncAlways
	if cfg.FetchLog != "" {
		l, err := OpenFetchLog(cfg.FetchLog, always)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrArchive, err)
		}
		w.fetchLog = l
	}
	if cfg.WARCDir != "" {
		w.recoverWARCs(cfg.WARCDir)
		ww, err := warc.NewWriter(warc.WriterOptions{Dir: cfg.WARCDir, MaxSize: int64(cfg.WARCMaxSize), Sync: always,
			Info: []warc.Field{{Name: "http-header-user-agent", Value: cfg.UserAgent}, {Name: "operator-crawler", Value: w.opts.ID}}})
		if err == nil {
			err = probeDir(cfg.WARCDir)
		}
		if err != nil {
			if w.fetchLog != nil {
				w.fetchLog.Close()
			}
			return fmt.Errorf("%w: WARC directory: %w", ErrArchive, err)
		}
		w.archiver = NewArchiver(ww)
	}
	return nil
}

// probeDir checks that a file can be created and written in dir, so that
// an unwritable or full WARC directory stops the crawler before its
// first fetch rather than at it.
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".trawl-probe-*")
	if err != nil {
		return err
	}
	_, err = f.Write([]byte{'\n'})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	return err
}

// recoverWARCs finalizes the .warc.gz.open files a killed crawler left in
// dir (see warc.Recover). A file it cannot finalize is logged and left:
// it does not keep this crawl from writing its own files.
func (w *Worker) recoverWARCs(dir string) {
	recs, err := warc.Recover(dir)
	for _, r := range recs {
		switch {
		case r.Damaged != nil:
			w.log.Error("left-over WARC file unreadable past a record: kept as it is, renamed", "file", r.Path, "records", r.Records, "err", r.Damaged)
		case r.Path == "":
			w.log.Warn("left-over WARC file held no whole record: removed", "file", r.Open)
		default:
			w.log.Warn("left-over WARC file of a stopped crawler finalized", "file", r.Path, "records", r.Records, "cut_bytes_removed", r.Cut)
		}
	}
	if err != nil {
		w.log.Error("left-over WARC files not finalized", "dir", dir, "err", err)
	}
}

func (w *Worker) closeOutputs() error {
	var errs []error
	if w.fetchLog != nil {
		errs = append(errs, w.fetchLog.Close())
	}
	if w.archiver != nil {
		errs = append(errs, w.archiver.w.Close())
	}
	return errors.Join(errs...)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// pollBackoff is the wait after the streak-th empty lease reply in a row
// (0 for the first).
func pollBackoff(streak int) time.Duration {
	d := pollBackoffMin
	for ; streak > 0 && d < pollBackoffMax; streak-- {
		d *= 2
	}
	return min(d, pollBackoffMax)
}
