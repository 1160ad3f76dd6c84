package frontier

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
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
	h.dirty = true
	s.queued++
	return nil
}

// Compact moves every inbox record into `queue`, oldest first, in
// transactions of up to 100,000 records, and reports how many it moved.
// It releases the lock between transactions, so Apply and Lease go on
// meanwhile. Checkpoint calls it; calling it more often trades write
// batching for a smaller inbox.
func (s *State) Compact() (int, error) {
	total := 0
	for {
		s.mu.Lock()
		if err := s.checkLocked(); err != nil {
			s.mu.Unlock()
			return total, err
		}
		if s.inboxN == 0 {
			s.mu.Unlock()
			return total, nil
		}
		n, err := s.compactChunkLocked()
		s.mu.Unlock()
		total += n
		if err != nil {
			return total, fmt.Errorf("frontier: %w", err)
		}
	}
}

// compactLocked moves the whole inbox without releasing the lock.
func (s *State) compactLocked() (int, error) {
	total := 0
	for s.inboxN > 0 {
		n, err := s.compactChunkLocked()
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// compactChunkLocked moves the oldest compactChunk inbox records.
func (s *State) compactChunkLocked() (int, error) {
	n := 0
	moved := map[*host]int{}
	err := s.updateLocked(func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketInbox)
		segs := tx.Bucket(bucketSegments)
		var items []inboxRecord
		var keys [][]byte
		c := ib.Cursor()
		for k, v := c.First(); k != nil && len(items) < compactChunk; k, v = c.Next() {
			rec, err := decodeInbox(v)
			if err != nil {
				return fmt.Errorf("compact: %w", err)
			}
			h := s.hosts[rec.Host]
			if h == nil {
				return fmt.Errorf("%w: inbox record names unknown host %q", ErrCorrupt, rec.Host)
			}
			moved[h]++
			items = append(items, rec)
			keys = append(keys, bytes.Clone(k))
		}
		slices.SortFunc(items, func(a, b inboxRecord) int {
			if c := strings.Compare(a.Host, b.Host); c != 0 {
				return c
			}
			return cmp.Compare(a.Seq, b.Seq)
		})
		for i := 0; i < len(items); {
			j := i + 1
			for j < len(items) && items[j].Host == items[i].Host {
				j++
			}
			if _, err := appendSegments(segs, items[i].Host, items[i:j]); err != nil {
				return fmt.Errorf("compact: %w", err)
			}
			i = j
		}
		n = len(items)
		if int64(n) == s.inboxN {
			// Everything moved: drop the bucket (freeing its pages
			// wholesale) and recreate it with its sequence.
			seq := ib.Sequence()
			if err := tx.DeleteBucket(bucketInbox); err != nil {
				return fmt.Errorf("compact: %w", err)
			}
			nb, err := tx.CreateBucket(bucketInbox)
			if err != nil {
				return fmt.Errorf("compact: %w", err)
			}
			return nb.SetSequence(seq)
		}
		// Delete the moved records by key (a cursor's First after
		// deletes walks the emptied pages again: quadratic).
		for _, k := range keys {
			if err := ib.Delete(k); err != nil {
				return fmt.Errorf("compact: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for h, m := range moved {
		h.inbox = h.inbox[m:]
		if len(h.inbox) == 0 {
			h.inbox = nil
		}
	}
	s.inboxN -= int64(n)
	return n, nil
}
