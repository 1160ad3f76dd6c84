package frontier

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// The inbox.
//
// Apply does not put a new URL into its host's queue segments: new links
// spread over many hosts would each rewrite a different host's last
// segment, a 4 KiB page per new URL. Apply appends instead, per host it
// admitted URLs of, one record to `inbox`: those URLs as a segment (the
// run of seqs they got, front-coded and compressed, store.Segment), keyed by
// the bucket's own sequence, so a transaction writes a handful of pages
// whatever the number of URLs. Compact moves the oldest inbox records into
// the hosts' segments, host by host, so a host's URLs of the whole
// interval cost one segment write; Checkpoint runs it. Every URL carries
// its host sequence number from admission, and Compact moves the oldest
// records first, so for every host its segments precede (have smaller
// seqs than) its inbox records, and a host's inbox records hold
// consecutive seqs in key order (queue.go has the whole order). A lease
// from the inbox moves the host's HeadSeq, as from a segment, and deletes
// the record with its last URL. Memory keeps, per host, its inbox keys in
// order (8 bytes per host and Apply since the last compaction), rebuilt on
// Open by scanning the inbox.

// compactChunk is how many inbox URLs one Compact transaction moves: the
// default of knobs.compactChunk.
const compactChunk = 100_000

// inboxFill is the bbolt FillPercent of `inbox` when Apply writes it.
const inboxFill = 0.95

// inboxRecordBytes bounds an inbox record's URLs (their bytes plus 10
// each, before front coding): one Apply may admit any number of URLs of a
// host (a sitemap), and a reader refuses a segment body over
// store.MaxSegmentBody. The default of knobs.inboxRecordBytes.
const inboxRecordBytes = store.MaxSegmentBody / 4

// enqueueLocked queues a new URL of h: it joins h's URLs of this Apply,
// which flushInboxLocked writes as one inbox record before the commit.
func (s *State) enqueueLocked(h *host, url string, depth, hops uint32, now time.Time) {
	s.queueLastLocked(h, store.URLRecord{URL: url, Depth: depth, EnqueuedAt: now, Hops: hops})
	h.rec.Admitted++
	// Not h.dirty: an admission alone does not rewrite the host record
	// (a random page per host per Apply); Open replays the inbox records
	// the record does not reflect (seq >= its NextSeq) into its counts.
}

// requeueLastLocked puts the URL of lease l back at the end of its host's
// queue, behind every URL the host has queued, with its attempts: a
// throttled URL's retry waits its turn (politeness.go). Unlike
// requeueLocked it takes a new seq, through the inbox. h is dirty (an
// outcome), so its record, written in the same transaction, counts it.
func (s *State) requeueLastLocked(h *host, l *store.LeaseRecord, attempts uint32, now time.Time) {
	s.queueLastLocked(h, store.URLRecord{URL: l.URL, Depth: l.Depth, Attempts: attempts, EnqueuedAt: now, Hops: l.Hops})
	h.dirty = true
}

// queueLastLocked adds r at the end of h's queue: it joins h's URLs of
// this Apply, which flushInboxLocked writes as one inbox record before
// the commit.
func (s *State) queueLastLocked(h *host, r store.URLRecord) {
	if h.pending == 0 {
		// A slot of an earlier Apply keeps its entries' array.
		if n := len(s.pending); n < cap(s.pending) {
			s.pending = s.pending[:n+1]
			s.pending[n].First = h.rec.NextSeq
		} else {
			s.pending = append(s.pending, store.Segment{First: h.rec.NextSeq})
		}
		s.pendingHosts = append(s.pendingHosts, h)
		h.pending = int32(len(s.pending))
	}
	g := &s.pending[h.pending-1]
	g.Entries = append(g.Entries, r)
	s.inboxN++
	h.rec.NextSeq++
	h.rec.Queued++
	s.queued++
}

// keepPending is the most URLs a slot of State.pending keeps room for from
// one Apply to the next.
const keepPending = 1024

// flushInboxLocked writes the URLs enqueueLocked queued, one inbox record
// per host, and adds its key to the host's inbox.
func (s *State) flushInboxLocked(ib *bolt.Bucket) error {
	// Keys only ever append: a split page is never written into again,
	// so fill it (bbolt's default of 50% would leave half of every page
	// empty).
	ib.FillPercent = inboxFill
	for i, h := range s.pendingHosts {
		run := s.pending[i]
		for len(run.Entries) > 0 {
			n, size := 0, 0
			for n < len(run.Entries) && (n == 0 || size < s.knobs.inboxRecordBytes) {
				size += 10 + len(run.Entries[n].URL)
				n++
			}
			id, err := ib.NextSequence()
			if err != nil {
				return fmt.Errorf("inbox sequence: %w", err)
			}
			rec := store.InboxRecord{Host: h.name, Segment: store.Segment{First: run.First, Entries: run.Entries[:n]}}
			if err := ib.Put(store.U64Key(id), rec.Encode()); err != nil {
				return fmt.Errorf("enqueue: %w", err)
			}
			h.inbox = append(h.inbox, id)
			run.First, run.Entries = run.First+uint64(n), run.Entries[n:]
		}
		h.pending = 0
	}
	for i := range s.pending {
		s.pending[i].Entries = keepScratch(s.pending[i].Entries, keepPending)
	}
	clear(s.pendingHosts)
	s.pending, s.pendingHosts = s.pending[:0], s.pendingHosts[:0]
	return nil
}

// A compaction's transactions run as a pipeline of two stages: while the
// lock holder writes one transaction's segments (store.PutSegments, the host
// records, the commit and its fsync, on one goroutine: bbolt has one
// writer), the next transaction's hosts are planned (their inbox records
// read, decoded and re-encoded as segments, in read transactions) on
// other goroutines. Planning was two thirds of a compaction's time at
// 100,000 hosts and writing one third; in sequence they added up. On two
// cores the planning already fills both, so the write's CPU is not hidden;
// its I/O is, which at 1M hosts (1.1-1.3 s of write and fsync per 2M
// URLs) made a compaction ~1 s shorter (docs/benchmarks.md, "Frontier storage at scale").
//
// A plan reads no host: it reads a planInput, a copy taken with the lock
// held, so that Apply and Lease may change hosts meanwhile (between
// transactions, when yield releases the lock). What it planned is still
// right for a host unless a lease moved its HeadSeq (a lease from the
// inbox may delete a record too) or another compaction moved its records
// (CompactedSeq); Apply only appends records past the cutoff. Such hosts
// are planned again, with the lock held, before their transaction.
