package frontier

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/robots"
)

// Loading: what Open reads from the state file (schema, counters,
// filter, hosts, inbox, leases) into memory, or writes into a new one.

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
		s.blocksLoaded = true
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
		filterErr = store.Guard(func() error { return s.db.View(s.loadFilterTx) })
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
		if s.sched == nil {
			return nil
		}
		return s.db.View(s.loadScheduleTx)
	}
	return s.verifyLoaded() // builds the due blocks (verifyScheduleTx)
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
	for _, h := range s.ready {
		s.noteReadyLocked(h)
	}
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
	// The due block the schedule's segment keys count in: the file's,
	// whatever revisit.min says now (its block would misplace them).
	if b := meta.Get(store.KeySchedBlock); b != nil && s.sched != nil {
		if len(b) != 8 || store.BEUint64(b) == 0 || store.BEUint64(b) > math.MaxInt32 {
			return fmt.Errorf("%w: schedule block %x", ErrCorrupt, b)
		}
		s.sched.block = int64(store.BEUint64(b))
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
		s.dueN += int64(rec.DueN)
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
				s.pendTruth(store.URLHash(queued[i].URL))
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
