package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/internal/bus"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// Server defaults; Options documents each.
const (
	DefaultFetchBatch     = 1000
	DefaultBatchBytes     = 2 << 20
	DefaultAckWait        = 2 * time.Minute
	DefaultMaxAckPending  = 50_000
	DefaultExpireInterval = time.Second
	DefaultPullExpiry     = 5 * time.Second
	statusTimeout         = 2 * time.Second  // consumer info for Status, dead-letter publish
	defaultRequestTimeout = 10 * time.Second // client requests whose ctx has no deadline
)

// Options configures a Server. A zero field takes the default it
// names.
type Options struct {
	// Config supplies nats.stream, nats.prefix, nats.replicas and the
	// frontier keys shard, commit_interval, checkpoint_interval and
	// max_leases_per_reply. It must be the configuration the State was
	// opened with.
	Config config.Config
	// Logger receives the service's log lines (nil = discard).
	Logger *slog.Logger
	// Registry, when not nil, receives the service's own metrics (commits,
	// messages, dead letters, lease requests, checkpoints). The State's
	// counters are exported separately from Status.
	Registry prometheus.Registerer
	// FetchBatch is the most JetStream messages applied in one bbolt
	// transaction (default DefaultFetchBatch, 1000).
	FetchBatch int
	// BatchBytes ends a batch early once its messages hold this many bytes
	// (default DefaultBatchBytes, 2 MiB: about 25,000 links). bbolt keeps
	// a transaction's inserts in memory until commit and splits pages only
	// then, so inserts into few pages (a young queue) cost O(n^2) in the
	// transaction size: 100,000 new URLs in one transaction into a fresh
	// file run 100 times slower than in 2 MiB batches.
	BatchBytes int
	// Workers prepare link batches in parallel (default GOMAXPROCS).
	Workers int
	// AckWait is how long JetStream waits for an ack before it redelivers
	// a message (default DefaultAckWait, 2 min). Tests shorten it so that
	// the messages a killed frontier held come back quickly.
	AckWait time.Duration
	// MaxAckPending bounds delivered but unacknowledged messages (default
	// DefaultMaxAckPending, 50,000).
	MaxAckPending int
	// ExpireInterval is how often expired leases return to their queues
	// (default DefaultExpireInterval, 1 s).
	ExpireInterval time.Duration
	// PullExpiry is how long each pull request for the shard's messages
	// waits on the server (default DefaultPullExpiry, 5 s; at least
	// 1 s). The server sends an idle heartbeat every half of it. When two
	// are missed (a JetStream leader election, a stalled route), the
	// consumer issues a new pull; the service logs and counts it and goes
	// on. A pull sent to a consumer leader that then died is lost, so
	// this bounds how long a shard hears nothing after a NATS node dies:
	// at nats.go's 30 s the chaos test's 10 s leases expired three times
	// over and 2,000-5,300 pages were fetched again. Tests shorten it.
	PullExpiry time.Duration
	// MaxApplyTries is how many times a message that decodes may fail its
	// transaction alone before it is dead-lettered and terminated instead
	// (default DefaultMaxApplyTries, 3). A failed Apply stops the
	// frontier; the messages of the failed batch are applied one at a
	// time by the next run (see applyTries). Failures of the disk or the
	// State (environmental) count toward no message.
	MaxApplyTries int
}

func (o *Options) withDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.FetchBatch <= 0 {
		o.FetchBatch = DefaultFetchBatch
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = DefaultMaxAckPending
	}
	if o.MaxAckPending < o.FetchBatch {
		o.MaxAckPending = o.FetchBatch
	}
	if o.ExpireInterval <= 0 {
		o.ExpireInterval = DefaultExpireInterval
	}
	if o.PullExpiry <= 0 {
		o.PullExpiry = DefaultPullExpiry
	}
	if o.MaxApplyTries <= 0 {
		o.MaxApplyTries = DefaultMaxApplyTries
	}
}

// Server puts a State on NATS: it consumes the shard's link batches and
// outcomes from JetStream, grants leases on the work subject, and answers
// status and control (explain) requests. See the package documentation,
// section "The service".
type Server struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	st   *frontier.State
	opts Options
	log  *slog.Logger
	subj msg.Subjects
	m    *serviceMetrics

	shard, shards   int
	stream, durable string
	commitInterval  time.Duration
	checkpointEvery time.Duration
	maxLeases       int

	started atomic.Bool
	hungry  atomic.Bool // a lease request was answered empty since the last wake
	// The ingest watermark (see expiryCutoff): the stream time of the
	// last message applied, whether the consumer had more pending then,
	// and how many batches are being gathered or applied now (ingest).
	watermark    atomic.Int64 // unix nanoseconds
	behind       atomic.Bool
	busy         atomic.Int32
	decodeErrors atomic.Uint64 // messages dead-lettered since the service started
	lastPending  atomic.Int64  // the last consumer backlog read, for when NATS does not answer
	tries        applyTries    // messages whose transaction failed, kept on the consumer

	work chan *nats.Msg // lease requests, from the work subscription to workLoop
	// replyHeader makes the headers of the lease replies of one
	// serveWork: what this frontier reads (msg.HeaderOutcomeLinks,
	// msg.HeaderOutcomeBatch) and its epoch (msg.HeaderEpoch,
	// msg.HeaderLinksPerPage). s.leaseHeader
	// unless a test stands in a frontier of an earlier release. Set by
	// New, read-only after.
	replyHeader func() nats.Header
	epochBase   string // "<crawl ID>-<random drawn by New>"

	// hooks are failpoints that tests in this package set before Run;
	// nil fields do nothing.
	hooks struct {
		// apply runs before each Apply with the batch's messages; an
		// error it returns fails that Apply as the State's own would.
		apply func(msgs []jetstream.Msg) error
	}

	mu struct {
		sync.Mutex
		str  jetstream.Stream   // set by Run once the stream exists
		cons jetstream.Consumer // set by Run once the consumer exists
	}
}

// New checks opts and prepares a Server over st; it does no I/O.
// opts.Config must pass config.Config.Validate (New runs it and
// returns its field errors wrapped in ErrConfig): the service
// applies no defaults of its own to the configuration. The caller keeps
// ownership of nc and st: Run neither closes the connection nor the State.
func New(nc *nats.Conn, st *frontier.State, opts Options) (*Server, error) {
	if nc == nil || st == nil {
		return nil, errors.New("frontier: New needs a NATS connection and a State")
	}
	opts.withDefaults()
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	f := opts.Config.Frontier
	if opts.PullExpiry < time.Second {
		return nil, fmt.Errorf("frontier: PullExpiry %v is under 1s: %w", opts.PullExpiry, ErrConfig)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("frontier: jetstream: %w", err)
	}
	s := &Server{
		work:            make(chan *nats.Msg, 4096),
		nc:              nc,
		js:              js,
		st:              st,
		opts:            opts,
		log:             opts.Logger.With("shard", f.Shard),
		subj:            msg.NewSubjects(opts.Config.NATS.Prefix),
		shard:           f.Shard,
		shards:          f.Shards,
		stream:          opts.Config.NATS.Stream,
		durable:         ConsumerName(f.Shard),
		commitInterval:  f.CommitInterval,
		checkpointEvery: f.CheckpointInterval,
		maxLeases:       f.MaxLeasesPerReply,
		epochBase:       st.CrawlID() + "-" + strconv.FormatUint(rand.Uint64(), 36),
	}
	s.replyHeader = s.leaseHeader
	if s.m, err = newServiceMetrics(opts.Registry, f.Shard); err != nil {
		return nil, err
	}
	return s, nil
}

// ConsumerName is the durable JetStream consumer of shard.
func ConsumerName(shard int) string { return "frontier-" + strconv.Itoa(shard) }

// Run serves until ctx is done or a fatal error: it declares the stream and
// the shard's durable consumer, subscribes the work, status and control
// responders, and applies messages as they arrive. On ctx done it stops
// answering, applies and acks the messages it already holds, and writes a
// checkpoint; it returns nil then. A failed Apply, Lease or ExpireLeasesBefore is
// fatal: Run returns the error without checkpointing, because the State's
// memory may now differ from its file; the caller must close the State and
// the process should exit (unacked messages are redelivered to the next
// run). Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("frontier: Server.Run called twice")
	}
	cons, err := s.setup(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fatal := func(err error) { cancel(err) }

	subs, err := s.subscribe(fatal)
	defer func() {
		for _, sub := range subs {
			_ = sub.Unsubscribe()
		}
	}()
	if err != nil {
		return err
	}
	s.log.Info("frontier serving", "stream", s.stream, "consumer", s.durable,
		"links", s.subj.Links(s.shard), "done", s.subj.Done(s.shard), "work", s.subj.Work())

	var wg sync.WaitGroup
	tickCtx, stopTicks := context.WithCancel(ctx)
	wg.Go(func() { s.tick(tickCtx, fatal) })
	wg.Go(func() { s.checkpoints(tickCtx) })
	wg.Go(func() { s.workLoop(tickCtx, fatal) })

	ingestErr := s.ingest(ctx, cons)
	for _, sub := range subs {
		_ = sub.Unsubscribe()
	}
	stopTicks()
	wg.Wait()

	if ingestErr == nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
			ingestErr = cause
		}
	}
	if ingestErr != nil {
		s.log.Error("frontier stopping on a fatal error; restart it to recover from its file", "err", ingestErr)
		return ingestErr
	}
	if err := s.checkpointIfDue(); err != nil {
		return err
	}
	s.log.Info("frontier stopped")
	return nil
}

// setup declares the stream and creates or updates the shard's consumer.
func (s *Server) setup(ctx context.Context) (jetstream.Consumer, error) {
	str, err := bus.EnsureStream(ctx, s.js, s.opts.Config.NATS)
	if err != nil {
		return nil, fmt.Errorf("frontier: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, bus.DefaultConnectTimeout)
	defer cancel()
	prior, err := s.priorConsumer(cctx)
	if err != nil {
		return nil, err
	}
	if err := s.checkCrawl(prior); err != nil {
		return nil, err
	}
	if prior != nil {
		if err := s.tries.load(prior.Config.Metadata[MetadataApplyTries], prior.AckFloor.Stream); err != nil {
			s.log.Warn("failed transactions' record dropped", "err", err)
		}
	}
	if err := s.takeOver(cctx, str, prior); err != nil {
		return nil, err
	}
	cons, err := s.js.CreateOrUpdateConsumer(cctx, s.stream, s.consumerConfig())
	if err != nil {
		return nil, fmt.Errorf("frontier: consumer %s on stream %s: %w", s.durable, s.stream, err)
	}
	s.mu.Lock()
	s.mu.str, s.mu.cons = str, cons
	s.mu.Unlock()
	// A restart with messages waiting: no lease expires until they are
	// applied up to its deadline (expiryCutoff).
	if info := cons.CachedInfo(); info != nil && info.NumPending+uint64(info.NumAckPending) > 0 {
		s.behind.Store(true)
	}
	return cons, nil
}

// consumerConfig is the shard's durable consumer, its metadata holding
// the crawl ID and the failed transactions' record (applyTries).
func (s *Server) consumerConfig() jetstream.ConsumerConfig {
	meta := map[string]string{MetadataCrawlID: s.st.CrawlID()}
	if v := s.tries.value(); v != "" {
		meta[MetadataApplyTries] = v
	}
	return jetstream.ConsumerConfig{
		Durable:        s.durable,
		Description:    fmt.Sprintf("trawl frontier shard %d of %d", s.shard, s.shards),
		FilterSubjects: []string{s.subj.Links(s.shard), s.subj.Done(s.shard)},
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        s.opts.AckWait,
		MaxAckPending:  s.opts.MaxAckPending,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		MaxDeliver:     -1,
		Metadata:       meta,
	}
}

// takeOver makes the messages a killed predecessor had pulled but not
// acknowledged deliverable at once. JetStream redelivers them only when
// their AckWait (2 min) runs out, and a restarted frontier fetched
// nothing until then. Under work-queue retention (what bus.EnsureStream
// declares) a message stays in the stream until it is acknowledged, so
// deleting the shard's durable consumer loses nothing: the consumer setup
// creates it again, delivering everything still in the stream from the
// start, the unacknowledged messages included. Applying a message again
// is harmless (a repeated link is a duplicate, a repeated outcome names a
// finished lease). Under another retention a new consumer would deliver
// the whole stream again, so the consumer is kept and the messages come
// back after AckWait.
func (s *Server) takeOver(ctx context.Context, str jetstream.Stream, info *jetstream.ConsumerInfo) error {
	if info == nil {
		return nil
	}
	if info.NumAckPending == 0 {
		return nil
	}
	if str.CachedInfo().Config.Retention != jetstream.WorkQueuePolicy {
		s.log.Warn("messages of a previous run are unacknowledged; they come back after their AckWait (the stream is not a work queue, so its consumer is kept)",
			"consumer", s.durable, "unacked", info.NumAckPending, "ack_wait", info.Config.AckWait)
		return nil
	}
	if err := s.js.DeleteConsumer(ctx, s.stream, s.durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("frontier: taking over consumer %s on stream %s: %w", s.durable, s.stream, err)
	}
	s.log.Info("took over the messages a previous run left unacknowledged", "consumer", s.durable, "unacked", info.NumAckPending)
	return nil
}

// MetadataCrawlID is the metadata key of the shard's JetStream consumer
// that holds the crawl ID of the state file it serves (State.CrawlID).
const MetadataCrawlID = "trawl_crawl_id"

// priorConsumer returns the shard's consumer as a previous run left it,
// or nil when there is none (nor a stream).
func (s *Server) priorConsumer(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	cons, err := s.js.Consumer(ctx, s.stream, s.durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("frontier: consumer %s on stream %s: %w", s.durable, s.stream, err)
	}
	return cons.CachedInfo(), nil
}

// CheckState reports, without changing anything, whether the State is
// the one the shard's consumer served (see Run): an error wrapping
// ErrStateMissing when it is not. Run checks the same before serving;
// the one-command crawl calls it before it publishes its seeds.
func (s *Server) CheckState(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bus.DefaultConnectTimeout)
		defer cancel()
	}
	prior, err := s.priorConsumer(ctx)
	if err != nil {
		return err
	}
	return s.checkCrawl(prior)
}

// checkCrawl compares the State with the consumer a previous run left.
// A consumer stamped with another crawl ID served another state file; an
// unstamped one (from a version before crawl IDs) that has had messages
// acknowledged served some state, which cannot be this one if it has
// received nothing. Either way the state file that held the shard's
// crawl is gone, and serving would start the shard over.
func (s *Server) checkCrawl(prior *jetstream.ConsumerInfo) error {
	if prior == nil {
		return nil
	}
	path, id := s.st.Path(), s.st.CrawlID()
	remedy := fmt.Sprintf("restore the state file, or start the shard over deliberately: remove %s and delete the consumer (nats consumer rm %s %s)", path, s.stream, s.durable)
	if got := prior.Config.Metadata[MetadataCrawlID]; got != "" {
		if got != id {
			return fmt.Errorf("%w: consumer %s on stream %s served crawl %s, but state file %s holds crawl %s (new, emptied or replaced); %s",
				ErrStateMissing, s.durable, s.stream, got, path, id, remedy)
		}
		return nil
	}
	if prior.AckFloor.Stream > 0 && s.st.Empty() {
		return fmt.Errorf("%w: consumer %s on stream %s has had messages up to stream sequence %d applied, but state file %s has received none (new or emptied); %s",
			ErrStateMissing, s.durable, s.stream, prior.AckFloor.Stream, path, remedy)
	}
	return nil
}

// tick runs the lease-commit and lease-expiry timers until ctx is done.
func (s *Server) tick(ctx context.Context, fatal func(error)) {
	expire := time.NewTicker(s.opts.ExpireInterval)
	defer expire.Stop()
	// Leases are committed with the next Apply or, when no messages
	// arrive, by this flush, once a commit_interval old (see
	// State.updateLocked and FlushOlder).
	flush := time.NewTicker(s.commitInterval)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			if err := s.st.FlushOlder(s.commitInterval); err != nil {
				fatal(err)
				return
			}
			s.wakeIfReady()
		case <-expire.C:
			n, err := s.st.ExpireLeasesBefore(s.expiryCutoff())
			if err != nil {
				fatal(err)
				return
			}
			if n > 0 {
				s.m.expired.Add(float64(n))
				s.log.Debug("leases expired", "n", n)
			}
		}
	}
}

// checkpoints runs the checkpoint timer until ctx is done, on a goroutine
// of its own: a checkpoint of a large filter lets the state go between its
// parts and takes seconds (twice as long beside a busy ingest), which the
// lease-commit, wake and expiry timers do not wait for.
func (s *Server) checkpoints(ctx context.Context) {
	ckpt := time.NewTicker(s.checkpointEvery)
	defer ckpt.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ckpt.C:
			if err := s.checkpointIfDue(); err != nil {
				// The checkpoint's transaction rolled back; the journal
				// still covers every admitted key, so the next one retries.
				s.log.Error("checkpoint failed; will retry", "err", err)
			}
		}
	}
}

// expiryCutoff is how far leases may be expired: now when the ingest is
// idle and was caught up at its last message, else the stream time of the
// last message applied. Messages are delivered in stream order, so every
// outcome published before that time has been applied: a lease still out
// with its deadline before it got no outcome in time. Without this, a
// frontier behind on its stream expired leases whose outcomes were waiting
// in it and fetched their URLs again.
func (s *Server) expiryCutoff() time.Time {
	if s.busy.Load() > 0 || s.behind.Load() {
		return time.Unix(0, s.watermark.Load())
	}
	return time.Now()
}

// checkpointIfDue is the periodic checkpoint: it compacts the inbox every
// interval and writes the filter only when State.CheckpointIfDue says the
// journal is worth truncating.
func (s *Server) checkpointIfDue() error {
	start := time.Now()
	cs, did, err := s.st.CheckpointIfDue()
	if err != nil {
		s.m.checkpointErrors.Inc()
		return err
	}
	if did {
		s.m.checkpointSeconds.Observe(time.Since(start).Seconds())
		s.log.Debug("checkpoint", "chunks", cs.Chunks, "bytes", cs.Bytes, "took", time.Since(start))
	}
	return nil
}

// Status is the shard's progress: the State's counters, plus Pending (the
// shard's messages not yet committed and acked, read from the server with
// a short timeout, else the last value read; see pending) and the messages
// this service dead-lettered since it started. Safe for concurrent use;
// the backlog is read before the State so that a zero Pending implies
// every message published before the call is reflected in the counts.
func (s *Server) Status() msg.Status {
	pending := s.pending()
	st := wireStatus(s.st.Status())
	st.Shard, st.Shards = s.shard, s.shards
	if st.Time.IsZero() {
		st.Time = time.Now()
	}
	st.Pending = pending
	st.DecodeErrors += s.decodeErrors.Load()
	return st
}

// pending reads the shard's backlog. Under the work-queue retention that
// bus.EnsureStream declares, a message stays in the stream until its ack
// is processed, so the stream's message count on the shard's links and
// done subjects is exactly what is not yet committed and acked; unlike the
// consumer's NumPending, which the server updates asynchronously, it
// already includes every message whose publish was acked. For a stream
// declared otherwise it falls back to the consumer's pending plus unacked
// counts. When NATS does not answer it returns the last value read.
func (s *Server) pending() int64 {
	s.mu.Lock()
	str, cons := s.mu.str, s.mu.cons
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	if str == nil { // before Run: look it up
		var err error
		str, err = s.js.Stream(ctx, s.stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return 0 // nothing was ever published
		}
		if err != nil {
			s.log.Debug("stream info", "err", err)
			return s.lastPending.Load()
		}
	}
	var p int64
	if str.CachedInfo().Config.Retention != jetstream.WorkQueuePolicy && cons != nil {
		info, err := cons.Info(ctx)
		if err != nil {
			s.log.Debug("consumer info", "err", err)
			return s.lastPending.Load()
		}
		p = int64(info.NumPending) + int64(info.NumAckPending)
	} else {
		info, err := str.Info(ctx, jetstream.WithSubjectFilter(s.subj.Prefix+".*."+strconv.Itoa(s.shard)))
		if err != nil {
			s.log.Debug("stream info", "err", err)
			return s.lastPending.Load()
		}
		p = int64(info.State.Subjects[s.subj.Links(s.shard)] + info.State.Subjects[s.subj.Done(s.shard)])
	}
	s.lastPending.Store(p)
	return p
}
