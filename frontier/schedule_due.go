package frontier

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// dueBlocks counts the schedule's entries that are not leased by the
// due block of their due time (schedBlock), so that Status.Revisit.Due
// and Overdue and the policy's Tune need no scan: memory per distinct
// block (revisit.max / block of them at most: 2,880 at the defaults), not
// per URL. Open builds it from one walk of the schedule (scanScheduleTx,
// with Verify's checks when they run); entries update it as they move.
type dueBlocks struct {
	pend map[uint64]int64 // entries in the schedule inbox and segments
	due  map[uint64]int64 // entries in `due` (promoted, or made due by a sitemap)
}

func newDueBlocks() dueBlocks {
	return dueBlocks{pend: map[uint64]int64{}, due: map[uint64]int64{}}
}

// addBlock adds n to m[b], deleting the block at 0.
func addBlock(m map[uint64]int64, b uint64, n int64) {
	if v := m[b] + n; v != 0 {
		m[b] = v
	} else {
		delete(m, b)
	}
}

// pendLocked counts n entries due at Unix second due into (n > 0) or out
// of (n < 0) the schedule inbox, and pendBlockLocked n entries of a
// segment of block b (its key's) into or out of the segments; dueLocked
// counts entries into or out of `due`. No-ops in once mode (a file a
// continuous crawl wrote, reopened).
func (s *State) pendLocked(due int64, n int64) {
	if s.sched != nil {
		s.pendBlockLocked(s.sched.blockOf(due), n)
	}
}

func (s *State) pendBlockLocked(b uint64, n int64) {
	if s.sched != nil {
		addBlock(s.blocks.pend, b, n)
	}
}

func (s *State) dueLocked(due int64, n int64) {
	if s.sched != nil {
		addBlock(s.blocks.due, s.sched.blockOf(due), n)
	}
}

// dueCountsLocked returns Status.Revisit.Due and Overdue at now (see
// RevisitStatus): the entries in `due`, plus those in the schedule inbox
// and segments whose due block has started; of these, overdue are those
// whose block started more than revisit.min before now.
func (s *State) dueCountsLocked(now time.Time) (due, overdue int64) {
	if s.sched == nil {
		return s.dueN, 0
	}
	nowU, grace := now.Unix(), int64(s.sched.min/time.Second)
	due = s.dueN
	for b, n := range s.blocks.pend {
		if start := s.sched.blockStart(b); start <= nowU {
			due += n
			if nowU-start > grace {
				overdue += n
			}
		}
	}
	for b, n := range s.blocks.due {
		if nowU-s.sched.blockStart(b) > grace {
			overdue += n
		}
	}
	return due, overdue
}

// tuneEvery is how often the policy's Tune runs (its doc: about once a
// minute; its step was chosen for that rate).
const tuneEvery = time.Minute

// tuneLocked calls the policy's Tune with the due, overdue and scheduled
// counts when tuneEvery has passed since the last call (the first call
// only starts the clock). Lease and ExpireLeasesBefore call it: the
// service runs the latter every second.
func (s *State) tuneLocked(now time.Time) {
	if s.sched == nil {
		return
	}
	if s.tunedAt.IsZero() || now.Before(s.tunedAt) {
		s.tunedAt = now
		return
	}
	if now.Sub(s.tunedAt) < tuneEvery {
		return
	}
	s.tunedAt = now
	due, overdue := s.dueCountsLocked(now)
	s.sched.policy.Tune(due, overdue, s.scheduledLocked())
}

// scheduledLocked is every schedule entry, revisit leases included (the
// interval histogram's total).
func (s *State) scheduledLocked() int64 {
	var n int64
	for i := range 24 {
		n += int64(s.count[cSchedHist+i])
	}
	return n
}

// scheduleScan is what one walk of the schedule found: the entries per
// due block (nil maps without a scheduler) and in all.
type scheduleScan struct {
	blocks  dueBlocks
	entries int64
}

// schedKeyHost is the host of a schedule inbox or segment key.
func schedKeyHost(k []byte) (string, error) {
	i := bytes.IndexByte(k, 0)
	if i < 0 {
		return "", fmt.Errorf("%w: schedule key %q", ErrCorrupt, k)
	}
	return string(k[:i]), nil
}

// scanScheduleTx walks the schedule host by host (the inbox's and the
// segments' keys and `due`'s host buckets sort alike), decoding every
// entry. With check, it checks each host's Scheduled and DueN against its
// entries, that no URL has two entries and that no revisit lease's URL
// has one; memory is one host's entry hashes at a time.
func (s *State) scanScheduleTx(tx *bolt.Tx, check bool) (scheduleScan, error) {
	var sc scheduleScan
	if s.sched != nil {
		sc.blocks = newDueBlocks()
	}
	sb := schedBucketsOf(tx)
	if sb.due == nil || sb.inbox == nil || sb.segs == nil {
		return sc, nil // a file no continuous crawl wrote
	}
	leased := map[string][]*store.LeaseRecord{}
	if check {
		for _, l := range s.leases {
			if l.Revisit {
				leased[l.Host] = append(leased[l.Host], l)
			}
		}
	}
	block := func(e *store.SchedEntry) uint64 {
		if s.sched == nil {
			return 0
		}
		return s.sched.blockOf(e.Due)
	}
	seen := map[uint64]bool{}
	var name string
	add := func(e *store.SchedEntry, m map[uint64]int64) error {
		sc.entries++
		if m != nil {
			addBlock(m, block(e), 1)
		}
		if !check {
			return nil
		}
		h := store.URLHash(e.URL)
		if seen[h] {
			return fmt.Errorf("%w: %s has two schedule entries", ErrCorrupt, e.URL)
		}
		seen[h] = true
		return nil
	}
	var scheduled, due uint32
	// A segment's entries count in the block its key names (Compact
	// groups them by it, and promote takes a segment whole by it; after a
	// change of revisit.min the key's block numbering is not the new
	// one's, so every count of a segment's entries goes by its key).
	// Without check, a segment's count is all Open reads of it: decoding
	// every entry took 51 ms of a 200,000-entry schedule's walk, reading
	// counts 5-14 ms (BenchmarkRevisit's file; 100 ms with check).
	var buf []byte
	scanSegment := func(k, v []byte) error {
		b, err := store.SchedKeyBlock(name, k)
		if err != nil {
			return err
		}
		if !check {
			var n int
			if n, buf, err = store.SchedSegmentLen(buf, v); err != nil {
				return fmt.Errorf("schedule segment of %s: %w", name, err)
			}
			sc.entries += int64(n)
			scheduled += uint32(n)
			if sc.blocks.pend != nil {
				addBlock(sc.blocks.pend, b, int64(n))
			}
			return nil
		}
		es, err := store.DecodeSchedSegment(v)
		if err != nil {
			return fmt.Errorf("schedule segment of %s: %w", name, err)
		}
		for i := range es {
			if err := add(&es[i], nil); err != nil {
				return err
			}
		}
		if sc.blocks.pend != nil {
			addBlock(sc.blocks.pend, b, int64(len(es)))
		}
		scheduled += uint32(len(es))
		return nil
	}
	ci, cs, cd := sb.inbox.Cursor(), sb.segs.Cursor(), sb.due.Cursor()
	ik, iv := ci.First()
	sk, sv := cs.First()
	dk, dv := cd.First()
	for ik != nil || sk != nil || dk != nil {
		var ih, sh string
		var err error
		if ik != nil {
			if ih, err = schedKeyHost(ik); err != nil {
				return sc, err
			}
		}
		if sk != nil {
			if sh, err = schedKeyHost(sk); err != nil {
				return sc, err
			}
		}
		first := true
		for _, c := range []struct {
			k    []byte
			host string
		}{{ik, ih}, {sk, sh}, {dk, string(dk)}} {
			if c.k != nil && (first || c.host < name) {
				name, first = c.host, false
			}
		}
		clear(seen)
		scheduled, due = 0, 0
		for ik != nil && ih == name {
			e, err := store.DecodeSchedEntry(iv)
			if err != nil {
				return sc, fmt.Errorf("schedule inbox of %s: %w", name, err)
			}
			if err := add(&e, sc.blocks.pend); err != nil {
				return sc, err
			}
			scheduled++
			if ik, iv = ci.Next(); ik != nil {
				if ih, err = schedKeyHost(ik); err != nil {
					return sc, err
				}
			}
		}
		for sk != nil && sh == name {
			if err := scanSegment(sk, sv); err != nil {
				return sc, err
			}
			if sk, sv = cs.Next(); sk != nil {
				if sh, err = schedKeyHost(sk); err != nil {
					return sc, err
				}
			}
		}
		if dk != nil && string(dk) == name {
			b := sb.due.Bucket(dk)
			if dv != nil || b == nil {
				return sc, fmt.Errorf("%w: due key %q is not a host's bucket", ErrCorrupt, dk)
			}
			err := b.ForEach(func(_, v []byte) error {
				e, err := store.DecodeSchedEntry(v)
				if err != nil {
					return fmt.Errorf("due entry of %s: %w", name, err)
				}
				due++
				return add(&e, sc.blocks.due)
			})
			if err != nil {
				return sc, err
			}
			dk, dv = cd.Next()
		}
		if !check {
			continue
		}
		h := s.hosts[name]
		if h == nil {
			return sc, fmt.Errorf("%w: schedule of unknown host %q", ErrCorrupt, name)
		}
		if h.rec.Scheduled != scheduled || h.rec.DueN != due {
			return sc, fmt.Errorf("%w: host %s counts %d scheduled and %d due; the schedule holds %d and %d",
				ErrCorrupt, name, h.rec.Scheduled, h.rec.DueN, scheduled, due)
		}
		for _, l := range leased[name] {
			if seen[store.URLHash(l.URL)] {
				return sc, fmt.Errorf("%w: %s is leased and scheduled", ErrCorrupt, l.URL)
			}
		}
	}
	return sc, nil
}

// loadScheduleTx builds the due blocks from a walk of the schedule
// without Verify's checks (Open with frontier.verify_on_open off; when
// it is on, verifyScheduleTx builds them).
func (s *State) loadScheduleTx(tx *bolt.Tx) error {
	sc, err := s.scanScheduleTx(tx, false)
	if err != nil {
		return err
	}
	s.blocks, s.blocksLoaded = sc.blocks, true
	return nil
}
