package frontier

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/robots"
)

// SchemaVersion is the version of the state file's layout
// (store.SchemaVersion, where the layout is documented). Open refuses a
// file of an older version with ErrNeedsMigration (Migrate converts it)
// and of a newer one with ErrMismatch.
const SchemaVersion = store.SchemaVersion

// Options configure Open. The zero value of every field but Config means
// its default.
type Options struct {
	// Config supplies the Frontier, Politeness, Robots, Scope and Audit
	// sections, and Crawler.UserAgent (for the robots.txt product token).
	Config config.Config
	// Path is the bbolt file; "" means Config.Frontier.DataFile, or
	// <data_dir>/frontier-<shard>-of-<shards>.db when that is empty too.
	Path string
	// Logger receives the state's rare notices; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
	// ReadOnly opens an existing file without writing to it (frontier
	// check): Status, Explain and Verify work; Apply, Lease and the other
	// writes fail, and Close writes nothing.
	ReadOnly bool
	// tune, when set, changes the knobs Open starts from (defaultKnobs):
	// this package's tests and benchmarks.
	tune func(*knobs)
}

// State is one frontier shard: its Bloom filter, audit sample, host queues,
// politeness and robots state and leases, all in one bbolt file, plus the
// in-memory indexes rebuilt from it on Open. It is safe for concurrent use.
type State struct {
	// Set by Open, then read-only: read without mu.
	cfg   config.Config
	path  string
	log   *slog.Logger
	now   func() time.Time
	scope *scope
	agent string // robots.txt product token
	// The filter's kind and plan: mode is the configured one until load
	// reads the file's (an existing file keeps the kind it was written
	// with); sizing plans a fixed filter, chain a scalable one.
	mode   dedup.Mode
	sizing dedup.Sizing
	chain  dedup.ChainConfig

	maxInflight int
	sched       *scheduler // the revisit schedule; nil in once mode
	crawlID     string     // see CrawlID; fixed once Open returns
	// stampCrawlID: the file has no crawl ID yet; openFile stores crawlID.
	stampCrawlID bool
	readOnly     bool
	// openTx is the file's last transaction when Open returned: Close
	// writes nothing to a file nothing was written to since.
	openTx int
	db     *bolt.DB // bbolt's own locking; Prepare reads it without mu
	knobs  knobs    // tests may set checkpointYield between calls
	folds  folds    // the background fold of a scalable filter (fold.go)

	mu struct {
		sync.Mutex
		closed bool
		failed error // the first error of a write that left memory ahead of the file
	}
	// Every field of guarded is guarded by mu, as mu.closed and mu.failed
	// are (the methods named ...Locked run with mu held).
	guarded
}

// guarded is the State's memory that mu guards: the filter and the
// in-memory indexes rebuilt from the file on Open. It is embedded in
// State, so the many ...Locked methods write s.hosts for s.guarded.hosts;
// touch none of it without State.mu.
type guarded struct {
	filter seenFilter
	// growthStopLogged: the chain's stopped growth has been logged once.
	growthStopLogged bool

	hosts     map[string]*host // keys are the hosts' names (hostalloc.go)
	alloc     hostAlloc
	seedNames map[string]bool // seed host names without port
	ready     readyHeap
	readyNew  int // hosts in ready with queued URLs (noteReadyLocked)
	leases    map[uint64]*store.LeaseRecord
	// leaseDrops are the lease IDs dropLeaseLocked dropped in the update
	// running, deleted from the file as it ends (flushLeaseDropsLocked).
	leaseDrops []uint64
	deadlines  leaseHeap
	nextLease  uint64
	// tx is the write transaction Lease and ExpireLeasesBefore leave open (see
	// updateLocked); nil when everything is committed.
	tx     *bolt.Tx
	txOpen time.Time // when tx began (FlushOlder)
	count  counters
	queued int64
	inboxN int64 // URLs in the inbox, not leased
	// pending are the URLs the Apply under way admitted, per host (in
	// pendingHosts), until flushInboxLocked writes them to the inbox.
	pending      []store.Segment
	pendingHosts []*host
	lastHost     *host // see findHostLocked
	heads        headCache
	// inboxStaleMax is the last key of the inbox records Open skipped as
	// already moved (0: none); Compact deletes them.
	inboxStaleMax uint64
	// truthPending holds the audit sample's new keys admitted since the
	// last compaction, which Compact writes to `truth` (audit.go).
	truthPending map[uint64]struct{}
	applyGen     uint64 // Apply calls so far (host.applyGen)
	scratch      applyScratch
	loosened     uint64 // see Loosened
	doneN        int64
	dueN         int64 // entries in `due` (host records' DueN)
	// blocks counts the schedule's entries by due block (schedule_due.go);
	// blocksLoaded is false until Open has walked the schedule.
	blocks       dueBlocks
	blocksLoaded bool
	tunedAt      time.Time // the policy's last Tune (tuneLocked)
	lastCP       CheckpointStatus
	journaled    int64     // keys journaled since the last checkpoint
	cpBase       time.Time // the last checkpoint, or Open: the journal's age starts here
}

// StatePath is where the state file of cfg's shard lives when
// Options.Path is empty: frontier.data_file, or
// <data_dir>/frontier-<shard>-of-<shards>.db when that is empty too.
func StatePath(cfg config.Config) string {
	if cfg.Frontier.DataFile != "" {
		return cfg.Frontier.DataFile
	}
	return filepath.Join(cfg.DataDir, fmt.Sprintf("frontier-%d-of-%d.db", cfg.Frontier.Shard, cfg.Frontier.Shards))
}

// Open opens (or creates) the state file of shard opts.Config.Frontier.Shard.
// A file written for another schema version, shard, shard count or filter
// sizing is refused with an error wrapping ErrMismatch (dedup.ErrMismatch
// for a stored filter that disagrees), garbled records with ErrCorrupt.
func Open(opts Options) (*State, error) {
	cfg := opts.Config
	fc := cfg.Frontier
	if fc.Shards < 1 || fc.Shard < 0 || fc.Shard >= fc.Shards {
		return nil, fmt.Errorf("%w: shard %d of %d", ErrInvalid, fc.Shard, fc.Shards)
	}
	mode, sizing, chain, err := planFilter(fc.Filter)
	if err != nil {
		return nil, err
	}
	sc, err := newScope(cfg)
	if err != nil {
		return nil, err
	}
	sched, err := newScheduler(cfg.Crawl.Mode, cfg.Revisit)
	if err != nil {
		return nil, err
	}
	s := &State{
		cfg: cfg, path: opts.Path, log: opts.Logger, now: opts.Now, scope: sc,
		agent: robots.ProductToken(cfg.Crawler.UserAgent), mode: mode, sizing: sizing, chain: chain,
		maxInflight: max(1, fc.MaxInflightPerHost), sched: sched, readOnly: opts.ReadOnly, knobs: defaultKnobs(),
		guarded: guarded{
			hosts: make(map[string]*host), seedNames: make(map[string]bool),
			leases: make(map[uint64]*store.LeaseRecord), heads: headCache{max: int(fc.HeadCache)},
		},
	}
	if opts.tune != nil {
		opts.tune(&s.knobs)
	}
	if sched != nil {
		s.blocks = newDueBlocks()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.path == "" {
		s.path = StatePath(cfg)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return nil, fmt.Errorf("frontier: %w", err)
	}
	if err := s.openFile(); err != nil {
		return nil, err
	}
	s.cpBase = s.now()
	return s, nil
}

// planFilter reads the configured filter's kind and plan. A fixed filter
// is planned for capacity; a scalable one's capacity is only the count
// progress is measured against, so it is not planned as a size (a fixed
// file found by load brings its own sizing).
func planFilter(f config.Filter) (dedup.Mode, dedup.Sizing, dedup.ChainConfig, error) {
	layout := dedup.DefaultLayout
	if f.Layout != "" {
		l, err := dedup.ParseLayout(f.Layout)
		if err != nil {
			return 0, dedup.Sizing{}, dedup.ChainConfig{}, fmt.Errorf("%w: frontier.filter.layout: %w", ErrInvalid, err)
		}
		layout = l
	}
	mode := dedup.DefaultMode
	if f.Mode != "" {
		var err error
		if mode, err = dedup.ParseMode(f.Mode); err != nil {
			return 0, dedup.Sizing{}, dedup.ChainConfig{}, fmt.Errorf("%w: frontier.filter.mode: %w", ErrInvalid, err)
		}
	}
	var sizing dedup.Sizing
	chain := f.Chain(layout)
	if mode == dedup.ModeFixed {
		var err error
		if sizing, err = dedup.PlanLayout(f.Capacity, f.FP, layout); err != nil {
			return 0, dedup.Sizing{}, dedup.ChainConfig{}, fmt.Errorf("frontier: filter sizing: %w", err)
		}
	} else if err := chain.Validate(); err != nil {
		return 0, dedup.Sizing{}, dedup.ChainConfig{}, fmt.Errorf("%w: frontier.filter: %w", ErrInvalid, err)
	}
	return mode, sizing, chain, nil
}

// boltOptions are the options the state file is opened with.
func boltOptions(readOnly bool) *bolt.Options {
	bo := *dedup.BoltOptions()
	bo.Timeout = 2 * time.Second // another process holding the file: fail, do not hang
	// Map 1 GiB from the start: every remap as the file grows would
	// re-read the whole file (dedup's MAP_POPULATE) and copy live nodes.
	bo.InitialMmapSize = 1 << 30
	// Do not rewrite the freelist on every commit: Close writes it
	// (commitFinalLocked); bbolt rebuilds it in memory, walking the file,
	// when it opens a file that was not closed.
	bo.NoFreelistSync = true
	bo.ReadOnly = readOnly
	return &bo
}

// openFile opens s.path with bbolt, loads it and checks it, writing
// nothing to an existing file until every check that can refuse it has
// passed: its structure (store.CheckFile, with plain reads before bbolt maps
// it), its schema and crawl ID, the filter with its journal, and every
// record against the others and the filter (verifyLoaded, unless
// frontier.verify_on_open is off: what `frontier check` finds, Open
// refuses, with the same reason). bbolt writes nothing
// when it opens an existing file (with NoFreelistSync it rebuilds a
// missing freelist, one kill -9 left, in memory), and load reads in read
// transactions only; only then does a file from before crawl IDs get one.
// So a refused file, and one a caller refuses after Open (the service, by
// its crawl ID) and closes with nothing written, is left as it was. A
// corrupt file gives ErrCorrupt, never a crash: a panic or fault while
// bbolt opens it or while load reads it is an error.
func (s *State) openFile() error {
	if _, err := store.CheckFile(s.path); err != nil {
		return err
	}
	if s.readOnly {
		if _, err := os.Stat(s.path); err != nil {
			return fmt.Errorf("frontier: %w", err)
		}
	}
	err := store.Guard(func() (err error) {
		s.db, err = bolt.Open(s.path, 0o600, boltOptions(s.readOnly))
		return err
	})
	if err != nil {
		return fmt.Errorf("frontier: open %s: %w", s.path, err)
	}
	err = store.Guard(s.load)
	if err == nil && s.stampCrawlID {
		// A file from before crawl IDs: it gets one now.
		err = s.db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(store.BucketMeta).Put(store.KeyCrawlID, []byte(s.crawlID))
		})
	}
	if err != nil {
		_ = store.Guard(func() error {
			if s.filter != nil {
				s.filter.Close()
			}
			return s.db.Close()
		})
		if errors.Is(err, ErrNeedsMigration) {
			return fmt.Errorf("%w; convert it with `frontier migrate --data-file %s` (the old file stays until the new one is complete)", err, s.path)
		}
		return fmt.Errorf("%w (file %s)", err, s.path)
	}
	s.openTx = s.committedTx()
	return nil
}

func (s *State) getHostLocked(name string) *host {
	h := s.findHostLocked(name)
	if h == nil {
		h = s.alloc.new(name)
		s.hosts[h.name] = h
		s.lastHost = h
	}
	return h
}

// findHostLocked returns the host named name, or nil. It remembers the
// last one it found: most links of a page are on the page's host, and a
// map lookup per link was 7% of an Apply's CPU.
func (s *State) findHostLocked(name string) *host {
	if h := s.lastHost; h != nil && h.name == name {
		return h
	}
	h := s.hosts[name]
	if h != nil {
		s.lastHost = h
	}
	return h
}

// check returns why the state cannot be used, or nil. Call with mu held.
func (s *State) checkLocked() error {
	switch {
	case s.mu.closed:
		return ErrClosed
	case s.mu.failed != nil:
		return fmt.Errorf("%w: %w", ErrFailed, s.mu.failed)
	}
	return nil
}

// Close compacts the inbox and checkpoints if due (see CheckpointIfDue;
// unless an earlier write failed), closes the file and
// releases the filter. Calling it again returns nil.
func (s *State) Close() error {
	s.folds.stop() // a fold in the background gives up: the chain stays as it was
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	var errs []error
	// A State nothing was written to since Open (a service that refused
	// the file, a look) leaves the file as Open found it.
	if s.mu.failed == nil && !s.readOnly && (s.tx != nil || s.committedTx() != s.openTx) {
		// The journal keeps every key durable, so Close applies the same
		// rule as the periodic tick: rewriting a mostly clean 1.12 GiB
		// filter at every stop cost seconds for nothing.
		var err error
		if s.checkpointDueLocked() {
			_, err = s.checkpointLocked(false)
		} else {
			_, err = s.compactLocked()
		}
		if err == nil {
			err = s.commitFinalLocked()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("frontier: close: %w", err))
		}
	}
	if s.tx != nil { // a failed state: nothing more reaches the file
		_ = s.tx.Rollback()
		s.tx = nil
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("frontier: close: %w", err))
	}
	if err := s.filter.Close(); err != nil {
		errs = append(errs, fmt.Errorf("frontier: close filter: %w", err))
	}
	return errors.Join(errs...)
}

// CrawlID identifies the crawl the state file belongs to: 32 hex digits
// drawn when the file was created (or first opened by a version that
// knew crawl IDs). The service stamps it on the shard's JetStream
// consumer, so that a state file that is not the one the consumer served
// (deleted, emptied, replaced) is noticed; see Service.Run.
func (s *State) CrawlID() string { return s.crawlID }

// Loosened counts the changes since Open after which the State may admit
// a link it rejected before: a host became a seed host (scope.seed_hosts_only
// rejected links to it), or a host whose robots.txt rules were in force got
// a new robots.txt result (they denied some links). Every other rejection
// stands for as long as the process runs (scope rules, trap rules, depth
// and per-page limits depend on the link alone; max_pages_per_host only
// fills) and a duplicate stays one. A crawler that skips links it has
// already published relies on this: see the service's epoch header.
func (s *State) Loosened() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loosened
}

// Empty reports whether the state has never received a link: a new or
// emptied file. The service uses it to tell a replaced state file from a
// consumer that served this one.
func (s *State) Empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[cLinksReceived] == 0 && len(s.hosts) == 0
}

// Path returns the bbolt file the state lives in.
func (s *State) Path() string { return s.path }

// NextReady returns the earliest time a host with work becomes leasable;
// ok is false when no host has work it may be given. A host never fetched
// is leasable from the zero time, so the time alone cannot say "none".
func (s *State) NextReady() (t time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ready) == 0 {
		return time.Time{}, false
	}
	return s.ready[0].eligibleAt().Time(), true
}

// NextDeadline returns the earliest lease deadline, or the zero time when
// no lease is out.
func (s *State) NextDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.deadlines) == 0 {
		return time.Time{}
	}
	return s.deadlines[0].Deadline
}
