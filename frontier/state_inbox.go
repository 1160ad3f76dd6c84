package frontier

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The inbox.
//
// Apply does not put a new URL into its host's queue segments: new links
// spread over many hosts would each rewrite a different host's last
// segment, a 4 KiB page per new URL. Apply appends it instead to `inbox`,
// keyed by the bucket's own sequence, a handful of pages per transaction.
// Compact moves the oldest inbox records into the hosts' segments
// (segment.go), host by host, so a host's URLs of the whole interval cost
// one segment write; Checkpoint runs it. Every URL carries its host
// sequence number from admission, and Compact moves the oldest records
// first, so for every host its segments precede (have smaller seqs than)
// its inbox entries (queue.go has the whole order). Memory keeps, per
// host, the inbox keys in order (8 bytes per URL admitted since the last
// compaction), rebuilt on Open by scanning the inbox.

// compactChunk is how many inbox records one Compact transaction moves
// (a variable for tests).
var compactChunk = 100_000

// inboxRecord is a URL admitted since the last compaction.
type inboxRecord struct {
	Host string
	Seq  uint64 // the host's sequence number: its queue key once compacted
	urlRecord
}

func (r *inboxRecord) encode() []byte {
	e := make(enc, 0, len(r.Host)+len(r.URL)+32)
	return e.u(hopsRecordVersion(r.Hops)).s(r.Host).u(r.Seq).s(r.URL).u(uint64(r.Depth)).u(uint64(r.Attempts)).t(r.EnqueuedAt).hops(r.Hops)
}

func decodeInbox(b []byte) (inboxRecord, error) {
	d := dec{b: b}
	v := d.versionUpTo("inbox record", hopsVersion)
	var r inboxRecord
	r.Host = d.s("inbox host")
	r.Seq = d.u("inbox seq")
	r.URL = d.s("inbox url")
	r.Depth = uint32(d.small("inbox depth", math.MaxUint32))
	r.Attempts = uint32(d.small("inbox attempts", math.MaxUint32))
	r.EnqueuedAt = d.t("inbox enqueued at")
	r.Hops = d.hops("inbox hops", v)
	return r, d.end("inbox record")
}

// enqueueLocked appends a new URL of h to the inbox.
func (s *State) enqueueLocked(ib *bolt.Bucket, h *host, url string, depth, hops uint32, now time.Time) error {
	id, err := ib.NextSequence()
	if err != nil {
		return fmt.Errorf("inbox sequence: %w", err)
	}
	rec := inboxRecord{Host: h.name, Seq: h.rec.NextSeq, urlRecord: urlRecord{URL: url, Depth: depth, EnqueuedAt: now, Hops: hops}}
	if err := ib.Put(u64key(id), rec.encode()); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	h.inbox = append(h.inbox, id)
	s.inboxN++
	h.rec.NextSeq++
	h.rec.Queued++
	h.rec.Admitted++
	// Not h.dirty: an admission alone does not rewrite the host record
	// (a random page per host per Apply); Open replays the inbox records
	// the record does not reflect (seq >= its NextSeq) into its counts.
	s.queued++
	return nil
}

// Compact moves every inbox record into its host's queue segments and
// reports how many it moved. It works host by host, in sorted order, so
// that each host it touches costs one segment append however many of its
// URLs wait in the inbox: transactions of up to 100,000 URLs, each moving
// whole hosts and advancing their CompactedSeq. Then it deletes the moved
// records from the inbox, oldest first (a sequential walk), or drops the
// bucket when nothing else waits there. A crash between the two leaves
// moved records in the inbox, which Open skips (their seq is below their
// host's CompactedSeq) and the next Compact deletes. It releases the lock
// between transactions, so Apply and Lease go on meanwhile. Checkpoint
// calls it; calling it more often trades write batching for a smaller
// inbox.
func (s *State) Compact() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return 0, err
	}
	n, err := s.compactWith(func() error {
		s.mu.Unlock()
		s.mu.Lock()
		return s.checkLocked()
	})
	if err != nil {
		return n, fmt.Errorf("frontier: %w", err)
	}
	return n, nil
}

// compactLocked moves the whole inbox without releasing the lock.
func (s *State) compactLocked() (int, error) { return s.compactWith(func() error { return nil }) }

// compactWith is Compact with the lock held; between transactions it calls
// yield, which may release and retake the lock (and then checks the state).
func (s *State) compactWith(yield func() error) (int, error) {
	if s.inboxN == 0 && s.inboxStaleMax == 0 {
		return 0, nil
	}
	// What is in the inbox now: records up to cutoff, of these hosts.
	cutoff := s.inboxStaleMax
	var names []string
	for name, h := range s.hosts {
		if n := len(h.inbox); n > 0 {
			names = append(names, name)
			cutoff = max(cutoff, h.inbox[n-1])
		}
	}
	slices.Sort(names)
	total := 0
	for i := 0; i < len(names); {
		n, next, err := s.compactHostsLocked(names, i, cutoff)
		total += n
		if err != nil {
			return total, fmt.Errorf("compact: %w", err)
		}
		i = next
		if err := yield(); err != nil {
			return total, err
		}
	}
	if err := s.dropInboxLocked(cutoff, yield); err != nil {
		return total, fmt.Errorf("compact: %w", err)
	}
	s.inboxStaleMax = 0
	return total, nil
}

// compactHostsLocked moves the inbox records up to cutoff of names[i:],
// whole hosts at a time, up to about compactChunk records, in one
// transaction, and returns how many it moved and the next host's index.
func (s *State) compactHostsLocked(names []string, i int, cutoff uint64) (moved, next int, err error) {
	var touched []*host
	var counts []int
	err = s.updateLocked(func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketInbox)
		segs := tx.Bucket(bucketSegments)
		segs.FillPercent = segmentFill
		for ; i < len(names) && moved < compactChunk; i++ {
			h := s.hosts[names[i]]
			m := 0
			for m < len(h.inbox) && h.inbox[m] <= cutoff {
				m++
			}
			if m == 0 {
				continue
			}
			recs := make([]inboxRecord, m)
			for j, id := range h.inbox[:m] {
				v := ib.Get(u64key(id))
				if v == nil {
					return fmt.Errorf("%w: inbox record %d of %s missing", ErrCorrupt, id, h.name)
				}
				if recs[j], err = decodeInbox(v); err != nil {
					return fmt.Errorf("inbox record of %s: %w", h.name, err)
				}
			}
			if _, err := appendSegments(segs, h.name, h.rec.HeadSeq, recs); err != nil {
				return err
			}
			h.rec.CompactedSeq = recs[m-1].Seq + 1
			h.dirty = true
			touched = append(touched, h)
			counts = append(counts, m)
			moved += m
		}
		return s.putMetaLocked(tx, touched)
	})
	if err != nil {
		return 0, i, err
	}
	for j, h := range touched {
		if h.inbox = h.inbox[counts[j]:]; len(h.inbox) == 0 {
			h.inbox = nil
		}
	}
	s.inboxN -= int64(moved)
	return moved, i, nil
}

// dropInboxLocked deletes the inbox records up to cutoff (all moved by
// compactHostsLocked, or skipped by Open as moved before a crash), in
// transactions of compactChunk, oldest first; when the inbox holds nothing
// else it drops the bucket instead (freeing its pages wholesale) and
// recreates it with its sequence.
func (s *State) dropInboxLocked(cutoff uint64, yield func() error) error {
	for {
		done := false
		err := s.updateLocked(func(tx *bolt.Tx) error {
			ib := tx.Bucket(bucketInbox)
			if s.inboxN == 0 {
				done = true
				seq := ib.Sequence()
				if err := tx.DeleteBucket(bucketInbox); err != nil {
					return err
				}
				nb, err := tx.CreateBucket(bucketInbox)
				if err != nil {
					return err
				}
				return nb.SetSequence(seq)
			}
			var keys [][]byte
			c := ib.Cursor()
			for k, _ := c.First(); k != nil && beUint64(k) <= cutoff && len(keys) < compactChunk; k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
			done = len(keys) < compactChunk
			for _, k := range keys {
				if err := ib.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || done {
			return err
		}
		if err := yield(); err != nil {
			return err
		}
	}
}
