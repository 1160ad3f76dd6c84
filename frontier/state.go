package frontier

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

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
	crawlID     string // see CrawlID; fixed once Open returns
	// stampCrawlID: the file has no crawl ID yet; openFile stores crawlID.
	stampCrawlID bool
	readOnly     bool
	// openTx is the file's last transaction when Open returned: Close
	// writes nothing to a file nothing was written to since.
	openTx int
	db     *bolt.DB // bbolt's own locking; Prepare reads it without mu
	knobs  knobs    // tests may set checkpointYield between calls

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
	leases    map[uint64]*store.LeaseRecord
	deadlines leaseHeap
	nextLease uint64
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
	s := &State{
		cfg: cfg, path: opts.Path, log: opts.Logger, now: opts.Now, scope: sc,
		agent: robots.ProductToken(cfg.Crawler.UserAgent), mode: mode, sizing: sizing, chain: chain,
		maxInflight: max(1, fc.MaxInflightPerHost), readOnly: opts.ReadOnly, knobs: defaultKnobs(),
		guarded: guarded{
			hosts: make(map[string]*host), seedNames: make(map[string]bool),
			leases: make(map[uint64]*store.LeaseRecord), heads: headCache{max: int(fc.HeadCache)},
		},
	}
	if opts.tune != nil {
		opts.tune(&s.knobs)
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
// passed: its structure (checkFile, with plain reads before bbolt maps
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
	if _, err := checkFile(s.path); err != nil {
		return err
	}
	if s.readOnly {
		if _, err := os.Stat(s.path); err != nil {
			return fmt.Errorf("frontier: %w", err)
		}
	}
	err := guard(func() (err error) {
		s.db, err = bolt.Open(s.path, 0o600, boltOptions(s.readOnly))
		return err
	})
	if err != nil {
		return fmt.Errorf("frontier: open %s: %w", s.path, err)
	}
	err = guard(s.load)
	if err == nil && s.stampCrawlID {
		// A file from before crawl IDs: it gets one now.
		err = s.db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(store.BucketMeta).Put(store.KeyCrawlID, []byte(s.crawlID))
		})
	}
	if err != nil {
		_ = guard(func() error {
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

// load creates the layout in a new file, or checks and reads an existing
// one in read transactions only (see openFile).
func (s *State) load() error {
	want := store.SchemaRecord{Version: SchemaVersion, Shard: s.cfg.Frontier.Shard, Shards: s.cfg.Frontier.Shards, Sizing: s.schemaSizing(), Audit: s.cfg.Audit.Fraction}
	fresh := false
	err := s.db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(store.BucketMeta); meta != nil {
			return s.checkMetaTx(meta, &want)
		}
		fresh = true // createTx refuses a file with other buckets
		return nil
	})
	if err != nil {
		return err
	}
	if fresh {
		if s.readOnly { // createTx refuses it, writing nothing
			return s.db.View(func(tx *bolt.Tx) error { return s.createTx(tx, want) })
		}
		if err := s.db.Update(func(tx *bolt.Tx) error { return s.createTx(tx, want) }); err != nil {
			if s.filter != nil {
				s.filter.Close()
				s.filter = nil
			}
			return err
		}
		return s.db.View(s.loadTx)
	}
	if err := s.db.View(checkBucketsTx); err != nil {
		return err
	}
	// The filter (1.1 GiB at 1e9: a copy and a CRC per chunk, on every
	// core) loads on a goroutine of its own while this one reads the
	// hosts, inbox and leases on one core: ~0.9 s of an Open at 20M URLs
	// over 1M hosts on 2 cores. Both are read transactions of their own;
	// the wait is deferred so that a panic here still lets the filter's
	// transaction end before the caller closes the file. Its error comes
	// first, as when it loaded first.
	var filterErr error
	loaded := make(chan struct{})
	defer func() { <-loaded }()
	go func() {
		defer close(loaded)
		filterErr = guard(func() error { return s.db.View(s.loadFilterTx) })
	}()
	err = s.db.View(s.loadTx)
	<-loaded
	if filterErr != nil {
		return filterErr
	}
	if err != nil {
		return err
	}
	if !s.cfg.Frontier.VerifyOnOpen && !s.readOnly {
		return nil
	}
	return s.verifyLoaded()
}

// checkMetaTx checks an existing file's schema against want (adopting the
// stored filter mode) and reads its crawl ID, drawing one for a file from
// before crawl IDs (stampCrawlID).
func (s *State) checkMetaTx(meta *bolt.Bucket, want *store.SchemaRecord) error {
	if err := s.adoptStoredFilter(meta.Get(store.KeySchema), want); err != nil {
		return err
	}
	if err := checkSchema(meta.Get(store.KeySchema), *want); err != nil {
		return err
	}
	if id := meta.Get(store.KeyCrawlID); id != nil || s.readOnly {
		if id != nil && !store.ValidCrawlID(string(id)) {
			return fmt.Errorf("%w: crawl ID %q", ErrCorrupt, id)
		}
		s.crawlID = string(id)
		return nil
	}
	// A file from before crawl IDs: openFile stores one once every check
	// has passed.
	s.crawlID, s.stampCrawlID = store.NewCrawlID(), true
	return nil
}

// createTx lays out a new, empty file: its buckets, schema record, crawl
// ID and a first checkpoint of a new filter. A file with other buckets is
// not a frontier state file.
func (s *State) createTx(tx *bolt.Tx, want store.SchemaRecord) error {
	if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		return fmt.Errorf("%w: bucket %q but no frontier meta: not a frontier state file", ErrCorrupt, name)
	}); err != nil {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("%w: an empty bbolt file, not a frontier state file", ErrCorrupt)
	}
	for _, b := range store.AllBuckets {
		if _, err := tx.CreateBucket(b); err != nil {
			return fmt.Errorf("frontier: create bucket %s: %w", b, err)
		}
	}
	meta := tx.Bucket(store.BucketMeta)
	if err := meta.Put(store.KeySchema, want.Encode()); err != nil {
		return err
	}
	s.crawlID = store.NewCrawlID()
	if err := meta.Put(store.KeyCrawlID, []byte(s.crawlID)); err != nil {
		return err
	}
	f, err := s.newFilter()
	if err != nil {
		return fmt.Errorf("frontier: new filter: %w", err)
	}
	if _, err := f.Checkpoint(tx); err != nil {
		f.Close()
		return fmt.Errorf("frontier: first checkpoint: %w", err)
	}
	s.filter = f
	return nil
}

// checkBucketsTx checks every bucket is there.
func checkBucketsTx(tx *bolt.Tx) error {
	for _, b := range store.AllBuckets {
		if tx.Bucket(b) == nil {
			return fmt.Errorf("%w: bucket %s missing", ErrCorrupt, b)
		}
	}
	return nil
}

// loadFilterTx loads the stored filter into s.filter.
func (s *State) loadFilterTx(tx *bolt.Tx) error {
	f, err := s.loadFilter(tx)
	if errors.Is(err, dedup.ErrCorrupt) || errors.Is(err, dedup.ErrNotFound) {
		return fmt.Errorf("%w: load filter: %w", ErrCorrupt, err)
	}
	if errors.Is(err, dedup.ErrMismatch) {
		return fmt.Errorf("%w: load filter: %w", ErrMismatch, err)
	}
	if err != nil {
		return fmt.Errorf("frontier: load filter: %w", err)
	}
	s.filter = f
	return nil
}

func checkSchema(b []byte, want store.SchemaRecord) error {
	if b == nil {
		return fmt.Errorf("%w: no schema record", ErrCorrupt)
	}
	got, err := store.DecodeSchema(b)
	if err != nil {
		return err
	}
	switch {
	case got.Version < want.Version && got.Version >= 1:
		return fmt.Errorf("%w: %w: schema version %d (%s), this code reads %d (%s)", ErrMismatch, ErrNeedsMigration,
			got.Version, store.SchemaNames[got.Version], want.Version, store.SchemaNames[SchemaVersion])
	case got.Version != want.Version:
		return fmt.Errorf("%w: schema version %d, this code reads %d", ErrMismatch, got.Version, want.Version)
	}
	if err := got.Validate(); err != nil {
		return err
	}
	switch {
	case got.Shards != want.Shards:
		return fmt.Errorf("%w: written for %d shards, configured %d (the shard count is fixed for the life of a crawl)", ErrMismatch, got.Shards, want.Shards)
	case got.Shard != want.Shard:
		return fmt.Errorf("%w: written for shard %d, configured shard %d", ErrMismatch, got.Shard, want.Shard)
	case want.Sizing.Bits != 0 && (got.Sizing.Capacity != want.Sizing.Capacity || got.Sizing.FP != want.Sizing.FP ||
		got.Sizing.Layout != want.Sizing.Layout || got.Sizing.Bits != want.Sizing.Bits || got.Sizing.K != want.Sizing.K):
		return fmt.Errorf("%w: filter capacity %d fp %g layout %s (%d bits, k %d), configured capacity %d fp %g layout %s (%d bits, k %d)",
			ErrMismatch, got.Sizing.Capacity, got.Sizing.FP, got.Sizing.Layout, got.Sizing.Bits, got.Sizing.K,
			want.Sizing.Capacity, want.Sizing.FP, want.Sizing.Layout, want.Sizing.Bits, want.Sizing.K)
	case got.Audit != want.Audit:
		return fmt.Errorf("%w: audit fraction %g, configured %g (the audit sample is only meaningful under one fraction)", ErrMismatch, got.Audit, want.Audit)
	}
	return nil
}

// loadTx rebuilds the in-memory state from the file.
func (s *State) loadTx(tx *bolt.Tx) error {
	if err := s.loadMetaTx(tx.Bucket(store.BucketMeta)); err != nil {
		return err
	}
	loaded, err := s.loadHostsTx(tx)
	if err != nil {
		return err
	}
	if err := s.loadInboxTx(tx); err != nil {
		return err
	}
	if err := s.loadLeasesTx(tx); err != nil {
		return err
	}
	// The ready heap built at once, not by a push per host, and from the
	// hosts in key order, not the map's: hosts never fetched tie on time
	// and order by name, so the array is most of a heap already (pushes
	// in map order were ~0.5 s of CPU at 1M hosts, heap.Init in map order
	// ~0.35 s).
	ready := func(h *host) {
		if s.wantsReady(h) {
			h.idx = int32(len(s.ready))
			s.ready = append(s.ready, h)
		}
	}
	for _, h := range loaded {
		ready(h)
	}
	if len(s.hosts) > len(loaded) { // hosts the inbox named that have no record yet
		for _, h := range s.hosts {
			if h.idx < 0 {
				ready(h)
			}
		}
	}
	heap.Init(&s.ready)
	return nil
}

// loadMetaTx reads the counters and the lease sequence.
func (s *State) loadMetaTx(meta *bolt.Bucket) error {
	if b := meta.Get(store.KeyCounters); b != nil {
		var c counters
		if err := store.DecodeCounters(b, c[:]); err != nil {
			return err
		}
		s.count = c
	}
	if b := meta.Get(store.KeyLeaseSeq); b != nil {
		if len(b) != 8 {
			return fmt.Errorf("%w: lease sequence is %d bytes", ErrCorrupt, len(b))
		}
		s.nextLease = binary.BigEndian.Uint64(b)
	}
	// Lease IDs are never reused, even for leases a crash forgot before
	// their commit (see updateLocked): after a restart they continue from
	// the clock in microseconds when that is ahead, and no frontier grants
	// more than one lease a microsecond.
	s.nextLease = max(s.nextLease, uint64(time.Now().UnixMicro()), 1)
	return nil
}

// loadHostsTx reads every host with its parsed robots.txt, and sums the
// queued and done counts. It returns the hosts read, in key order.
func (s *State) loadHostsTx(tx *bolt.Tx) ([]*host, error) {
	rb, hb := tx.Bucket(store.BucketRobots), tx.Bucket(store.BucketHosts)
	// Sized up front, and the hosts allocated as one block (hostalloc.go):
	// growing the map and a million allocations were half of loading 1M
	// hosts. Stats walks only the bucket's pages.
	n := hb.Stats().KeyN
	s.hosts = make(map[string]*host, n)
	s.alloc.reserve(n)
	loaded := make([]*host, 0, n)
	err := hb.ForEach(func(k, v []byte) error {
		rec, err := store.DecodeHost(v)
		if err != nil {
			return fmt.Errorf("host %q: %w", k, err)
		}
		// new copies the name: a view of k, not a string per host.
		h := s.alloc.new(unsafe.String(unsafe.SliceData(k), len(k)))
		h.rec = rec
		loaded = append(loaded, h)
		if rec.RobotsStatus == store.RobotsOK {
			h.rules = robots.Parse(rb.Get(k))
		}
		s.hosts[h.name] = h
		if rec.Seed {
			s.seedNames[hostName(h.name)] = true
		}
		s.queued += int64(rec.Queued)
		s.doneN += int64(rec.Done)
		return nil
	})
	return loaded, err
}

// loadInboxTx gives each host the keys of its inbox records, in order,
// skips the records Compact moved before a crash, counts the admissions a
// host's record does not reflect yet (Apply does not rewrite it for an
// admission alone), and takes the audit sample's keys among the URLs
// still queued there as pending (audit.go: they are not in `truth` yet).
func (s *State) loadInboxTx(tx *bolt.Tx) error {
	return tx.Bucket(store.BucketInbox).ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: inbox key of %d bytes", ErrCorrupt, len(k))
		}
		r, err := store.DecodeInbox(v)
		if err != nil {
			return err
		}
		h := s.getHostLocked(r.Host) // new since its record was last written: no record yet
		if r.First < h.rec.CompactedSeq {
			// Moved to its segments before a crash; Compact deletes it.
			s.inboxStaleMax = max(s.inboxStaleMax, binary.BigEndian.Uint64(k))
			return nil
		}
		if end := r.End(); end > h.rec.NextSeq {
			// Admitted after the host record was last written.
			n := end - max(h.rec.NextSeq, r.First)
			h.rec.NextSeq = end
			h.rec.Queued += n
			h.rec.Admitted += n
			s.queued += int64(n)
		}
		h.inbox = append(h.inbox, binary.BigEndian.Uint64(k))
		queued := r.Entries[r.Leased(h.rec.HeadSeq):]
		s.inboxN += int64(len(queued))
		for i := range queued {
			if s.scope.sampled(auditHash(queued[i].URL)) {
				s.pendTruth(hashKey(queued[i].URL))
			}
		}
		return nil
	})
}

// loadLeasesTx reads the open leases into their hosts and the deadline
// heap, and moves the lease sequence past them.
func (s *State) loadLeasesTx(tx *bolt.Tx) error {
	return tx.Bucket(store.BucketLeases).ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: lease key of %d bytes", ErrCorrupt, len(k))
		}
		id := binary.BigEndian.Uint64(k)
		l, err := store.DecodeLease(id, v)
		if err != nil {
			return fmt.Errorf("lease %d: %w", id, err)
		}
		h := s.hosts[l.Host]
		if h == nil {
			return fmt.Errorf("%w: lease %d names unknown host %q", ErrCorrupt, id, l.Host)
		}
		h.inflight++
		if l.Robots {
			h.robotsInflight = true
		}
		s.leases[id] = &l
		heap.Push(&s.deadlines, &l)
		if id >= s.nextLease {
			s.nextLease = id + 1
		}
		return nil
	})
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

// Write transactions. updateLocked runs fn in the open write transaction
// (beginning one if none is open) and commits it, fsync included, before it
// returns: Apply, Compact and Checkpoint use it, and the service acks
// messages only after it. updateLazyLocked runs fn in the same open
// transaction and leaves it open: Lease and ExpireLeasesBefore use it, so
// granting leases costs no fsync. Their writes become durable with the
// next commit, whoever makes it, or with FlushOlder, which the service
// calls every commit_interval (so within two of them). A crash before
// then forgets those leases together with their dequeues (one
// transaction): their URLs are still queued in the file and are offered
// again after the restart, and the
// outcomes crawlers send for them are stale (lease IDs are never reused,
// see loadTx), so the URL is fetched again: at least once, as after any
// lost lease. An error from fn, or a failed commit, leaves memory ahead
// of the file: the open transaction is rolled back and the state refuses
// every later write (ErrFailed).
func (s *State) updateLocked(fn func(tx *bolt.Tx) error) error {
	if err := s.updateLazyLocked(fn); err != nil {
		return err
	}
	return s.commitLocked()
}

// updateLazyLocked runs fn in the open write transaction without
// committing it; see updateLocked.
func (s *State) updateLazyLocked(fn func(tx *bolt.Tx) error) error {
	if s.tx == nil {
		tx, err := s.db.Begin(true)
		if err != nil {
			s.mu.failed = err
			return fmt.Errorf("begin: %w", err)
		}
		s.tx, s.txOpen = tx, time.Now()
	}
	if err := fn(s.tx); err != nil {
		s.abortLocked(err)
		return err
	}
	return nil
}

// viewLocked runs fn on what the state has written: in the open write
// transaction if there is one (it holds leases not yet committed), else
// in a read transaction.
func (s *State) viewLocked(fn func(tx *bolt.Tx) error) error {
	if s.tx != nil {
		return fn(s.tx)
	}
	return s.db.View(fn)
}

// commitLocked commits the open write transaction, if any.
func (s *State) commitLocked() error {
	if s.tx == nil {
		return nil
	}
	tx := s.tx
	s.tx = nil
	if err := tx.Commit(); err != nil {
		s.mu.failed = err
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// commitFinalLocked is Close's last commit: it commits the open write
// transaction (or an empty one when none is open) with bbolt's freelist
// written, so that the next Open reads the freelist instead of walking
// every page of the file to rebuild it (0.8 s at 20M URLs over 1M hosts).
// Other commits run with NoFreelistSync (writing the freelist on every
// commit costs a page or more each time), and the first of them after an
// Open drops the freelist from the meta page again, so a file that was not
// closed (kill -9) has none, and bbolt rebuilds it when it opens the file.
// checkFile checks a freelist against the pages in use before bbolt
// trusts it.
func (s *State) commitFinalLocked() error {
	s.db.NoFreelistSync = false
	defer func() { s.db.NoFreelistSync = true }()
	if s.tx != nil {
		return s.commitLocked()
	}
	if err := s.db.Update(func(*bolt.Tx) error { return nil }); err != nil {
		return fmt.Errorf("write freelist: %w", err)
	}
	return nil
}

// abortLocked rolls back the open write transaction and fails the state.
func (s *State) abortLocked(err error) {
	if s.tx != nil {
		_ = s.tx.Rollback()
		s.tx = nil
	}
	if s.mu.failed == nil {
		s.mu.failed = err
	}
}

// Flush commits the leases granted (and expired) since the last commit.
// It costs nothing when there are none.
func (s *State) Flush() error { return s.FlushOlder(0) }

// FlushOlder is Flush when the first of those leases was granted at
// least age ago; younger ones are left for the next commit, whoever
// makes it. The service calls it every commit_interval with that age:
// while messages come in, their commits carry the leases and this one
// rarely commits (each commit holds the state, and so every lease
// request and fetched notice, for its fsync); when none come, leases wait
// at most two commit_intervals.
func (s *State) FlushOlder(age time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tx == nil || time.Since(s.txOpen) < age {
		return nil
	}
	if err := s.checkLocked(); err != nil {
		return err
	}
	if err := s.commitLocked(); err != nil {
		return fmt.Errorf("frontier: flush leases: %w", err)
	}
	return nil
}

// putHostsLocked writes every dirty host record and the counters.
func (s *State) putMetaLocked(tx *bolt.Tx, dirty []*host) error {
	hb := tx.Bucket(store.BucketHosts)
	for _, h := range dirty {
		if !h.dirty {
			continue
		}
		h.dirty = false
		if err := hb.Put([]byte(h.name), h.rec.Encode()); err != nil {
			return fmt.Errorf("put host %s: %w", h.name, err)
		}
	}
	meta := tx.Bucket(store.BucketMeta)
	if err := meta.Put(store.KeyCounters, store.EncodeCounters(s.count[:])); err != nil {
		return fmt.Errorf("put counters: %w", err)
	}
	return meta.Put(store.KeyLeaseSeq, store.U64Key(s.nextLease))
}

// Checkpoint compacts the inbox (Compact), then writes the filter's dirty
// chunks in transactions of frontier.checkpoint_part, the last of which
// writes the counters and truncates the journal up to the keys journaled
// when it began. Between the transactions it lets go of the state: Apply
// and Lease go on, and what they admit stays in the journal for the next
// checkpoint (see checkpointLocked).
func (s *State) Checkpoint() (dedup.CheckpointStats, error) {
	// Compact chunk by chunk, letting Apply and Lease in between; what
	// arrives meanwhile is compacted under the lock below.
	if _, err := s.Compact(); err != nil {
		return dedup.CheckpointStats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return dedup.CheckpointStats{}, err
	}
	st, err := s.checkpointLocked(true)
	if err != nil {
		return st, fmt.Errorf("frontier: checkpoint: %w", err)
	}
	return st, nil
}

// committedTx is the ID of the last committed write transaction.
func (s *State) committedTx() (id int) {
	_ = s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
	return id
}

// checkpointLocked checkpoints the filter. With yield, it lets go of the
// state between its parts, so that Apply, Lease and the rest wait for one
// part at most instead of the whole checkpoint (4.2 s for a fully dirty
// 1e9 filter); Close, which must finish, does not yield.
func (s *State) checkpointLocked(yield bool) (dedup.CheckpointStats, error) {
	var st dedup.CheckpointStats
	start := time.Now()
	if _, err := s.compactLocked(); err != nil {
		return st, err
	}
	// Commit what is open (compactLocked did, unless the inbox was
	// empty): the checkpoint gets a transaction of its own, whose failure
	// loses nothing.
	if err := s.commitLocked(); err != nil {
		return st, err
	}
	// A round (dedup's BeginCheckpoint): the parts write the chunks
	// changed until now, and the last truncates the journal up to the
	// keys journaled until now. The keys Apply journals between the parts
	// stay in the journal, and their chunks stay marked for the next
	// checkpoint: without the round, a checkpoint that let Apply run
	// between its parts would chase the chunks Apply dirties and end only
	// when the ingest paused.
	if err := s.db.View(s.filter.BeginCheckpoint); err != nil {
		return st, err
	}
	journaled, began := s.journaled, s.now()
	// The changed chunks go in transactions of frontier.checkpoint_part,
	// the last of which truncates the journal: one transaction held every
	// changed chunk twice in memory (a copy for bbolt, and bbolt's pages),
	// 3.2-3.7 GiB owned beside a fully dirty 1e9 filter. A part in flight
	// is live heap twice over, and the garbage parts leave is collected
	// at twice the live heap: at 1M hosts (a 372 MiB live heap) 64 MiB
	// parts peaked at 1,070 MiB owned, 16 MiB parts (the default) at 936-961.
	var held time.Duration // the last part's
	var partTx int         // the last part's transaction ID
	busy := true           // the state was used while the last gap let go of it
	for more, first := true, true; more; first = false {
		if yield && !first {
			var err error
			if busy, err = s.yieldLocked(held, busy, partTx); err != nil {
				return st, err
			}
		}
		partStart := time.Now()
		err := s.db.Update(func(tx *bolt.Tx) error {
			partTx = tx.ID()
			var part dedup.CheckpointStats
			var err error
			if more, part, err = s.filter.CheckpointChunks(tx, int64(s.cfg.Frontier.CheckpointPart)); err != nil {
				return fmt.Errorf("checkpoint filter: %w", err)
			}
			st.Chunks, st.Bytes, st.Duration = st.Chunks+part.Chunks, st.Bytes+part.Bytes, st.Duration+part.Duration
			if more {
				return nil
			}
			return s.putMetaLocked(tx, nil) // the part that truncates the journal
		})
		if err != nil {
			// A failed part loses nothing: the journal still holds the
			// keys and its chunks stay dirty.
			return st, err
		}
		held = time.Since(partStart)
	}
	s.lastCP = CheckpointStatus{
		Count: s.lastCP.Count + 1, Last: s.now(), Seconds: time.Since(start).Seconds(),
		Bytes: st.Bytes, Chunks: st.Chunks,
	}
	// What Apply journaled while the parts ran stays in the journal; its
	// oldest key is younger than the round.
	s.journaled -= journaled
	s.cpBase = began
	return st, nil
}

// pauseLocked is the one place a method that holds mu lets go of it in
// the middle of its work: Compact between its transactions, a checkpoint
// between its parts (yieldLocked). It unlocks, runs wait (nil: none)
// without the lock, locks again and reports whether the state is still
// usable (checkLocked). Its caller must assume every guarded field
// changed meanwhile.
func (s *State) pauseLocked(wait func()) error {
	s.mu.Unlock()
	if wait != nil {
		wait()
	}
	s.mu.Lock()
	return s.checkLocked()
}

// yieldLocked lets the others have the state between two checkpoint
// parts (pauseLocked): for as long as the last part held it (held) when
// they used it in the last gap (busy), else only long enough to yield
// the processor; then it commits what they left open (bbolt has one
// writer, and a part is a write transaction of its own). The checkpoint
// so takes at most half of the state's time, and has no hurry: the
// journal holds the keys meanwhile. It reports whether the others used
// the state in this gap: a transaction left open, or one committed after
// lastTx, the last part's.
func (s *State) yieldLocked(held time.Duration, busy bool, lastTx int) (bool, error) {
	err := s.pauseLocked(func() {
		if s.knobs.checkpointYield != nil {
			s.knobs.checkpointYield()
		}
		if busy {
			time.Sleep(held)
		} else {
			runtime.Gosched()
		}
	})
	if err != nil {
		return busy, err
	}
	busy = s.tx != nil || s.committedTx() != lastTx
	return busy, s.commitLocked()
}

// Adaptive checkpoints. The journal makes every admitted key durable, so a
// filter checkpoint only bounds the journal (its size and the replay on
// open); it costs a rewrite of every dirty chunk, and keys hash to random
// positions: a few tens of thousands of new keys dirty nearly every chunk
// of a 1.12 GiB filter. A checkpoint is therefore due only once the
// journal, at 8 bytes a key, holds at least 1/checkpointJournalRatio of the
// bytes it would rewrite (about 2.2 million keys, a 17 MiB journal that
// replays in about a second, for a fully dirty 1e9 filter), or once the
// oldest journaled key is checkpointAgeFactor checkpoint intervals old.
const (
	checkpointJournalRatio = 64
	checkpointAgeFactor    = 10
)

// CheckpointIfDue compacts the inbox, then checkpoints the filter as
// Checkpoint does when the rule above says it is worth it; did reports
// whether it did. Checkpoint always checkpoints; Close checkpoints by the
// same rule, without letting go of the state.
func (s *State) CheckpointIfDue() (cs dedup.CheckpointStats, did bool, err error) {
	s.logGrowthStop()
	if _, err := s.Compact(); err != nil {
		return cs, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return cs, false, err
	}
	if !s.checkpointDueLocked() {
		return cs, false, nil
	}
	if cs, err = s.checkpointLocked(true); err != nil {
		return cs, false, fmt.Errorf("frontier: checkpoint: %w", err)
	}
	return cs, true, nil
}

func (s *State) checkpointDueLocked() bool {
	if s.journaled == 0 {
		return false
	}
	fs := s.filter.Stats()
	dirty := min(int64(fs.DirtyChunks)*int64(s.filter.ChunkBytes()), int64(fs.Bits/8))
	if s.journaled*8*checkpointJournalRatio >= dirty {
		return true
	}
	return s.now().Sub(s.cpBase) >= checkpointAgeFactor*s.cfg.Frontier.CheckpointInterval
}

// Close compacts the inbox and checkpoints if due (see CheckpointIfDue;
// unless an earlier write failed), closes the file and
// releases the filter. Calling it again returns nil.
func (s *State) Close() error {
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

// counters returns every persistent counter by name, plus the gauge
// "inbox" (tests read them).
func (s *State) counters() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]uint64{}
	for i, name := range counterNames {
		m[name] = s.count[i]
	}
	for r := Reason(0); r < NumReasons; r++ {
		m["rejected_"+r.String()] = s.count[reasonCounter(r)]
	}
	m["inbox"] = uint64(s.inboxN) // a gauge: URLs waiting for Compact
	for c := 0; c < numClasses; c++ {
		m["outcome_"+classNames[c]] = s.count[cClassBase+c]
	}
	for r := store.DoneReason(1); r <= store.MaxDoneReason; r++ {
		m["finished_"+strings.ReplaceAll(r.String(), "-", "_")] = s.count[cDoneByReason+int(r)]
	}
	m["hosts_given_up"] = s.count[cHostsGivenUp]
	return m
}

var counterNames = [cRejectBase]string{
	"links_received", "admitted", "duplicates", "filter_new", "robots_denied", "sampled_new",
	"fp_skips", "rescued", "done", "leases", "robots_leases", "expired", "retries", "failed",
}
