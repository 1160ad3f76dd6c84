package frontier

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// promoteLocked moves h's entries whose due block has come into `due`:
// whole segments of `sched`, and entries of the schedule inbox, and sets
// h's NextDue to the earliest block left.
func (s *State) promoteLocked(sb schedBuckets, h *host, now time.Time) error {
	if h.rec.NextDue == 0 || h.rec.NextDue > store.StampOf(now) {
		return nil
	}
	nowU := now.Unix()
	prefix := store.QueuePrefix(h.name)
	var next int64
	var drop [][]byte
	c := sb.segs.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		block, err := store.SchedKeyBlock(h.name, k)
		if err != nil {
			return err
		}
		if start := s.sched.blockStart(block); start > nowU {
			next = start
			break
		}
		entries, err := store.DecodeSchedSegment(v)
		if err != nil {
			return fmt.Errorf("schedule segment of %s: %w", h.name, err)
		}
		for i := range entries {
			if err := sb.putDue(h.name, h.rec.SchedSeq, entries[i].Encode()); err != nil {
				return err
			}
			h.rec.SchedSeq++
			s.dueLocked(entries[i].Due, 1)
		}
		s.pendBlockLocked(block, -int64(len(entries)))
		s.movedDueLocked(h, len(entries))
		drop = append(drop, bytes.Clone(k))
	}
	for _, k := range drop {
		if err := sb.segs.Delete(k); err != nil {
			return fmt.Errorf("delete schedule segment: %w", err)
		}
	}
	drop = drop[:0]
	c = sb.inbox.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		e, err := store.DecodeSchedEntry(v)
		if err != nil {
			return fmt.Errorf("schedule inbox of %s: %w", h.name, err)
		}
		if start := s.sched.blockStart(s.sched.blockOf(e.Due)); start > nowU {
			if next == 0 || start < next {
				next = start
			}
			continue
		}
		// The inbox key's seq is unique in `due` too.
		if err := sb.putDue(h.name, store.BEUint64(k[len(prefix):]), bytes.Clone(v)); err != nil {
			return err
		}
		s.pendLocked(e.Due, -1)
		s.dueLocked(e.Due, 1)
		drop = append(drop, bytes.Clone(k))
	}
	for _, k := range drop {
		if err := sb.inbox.Delete(k); err != nil {
			return fmt.Errorf("delete schedule inbox: %w", err)
		}
	}
	s.movedDueLocked(h, len(drop))
	h.rec.NextDue = 0
	if next != 0 {
		h.rec.NextDue = stampOfUnix(next)
	}
	h.dirty = true
	return nil
}

// movedDueLocked counts n of h's scheduled entries as moved into `due`.
func (s *State) movedDueLocked(h *host, n int) {
	h.rec.Scheduled -= uint32(min(n, int(h.rec.Scheduled)))
	h.rec.DueN += uint32(n)
	s.dueN += int64(n)
}

// pickRevisit decides whether h's next lease is a revisit: always when
// it has due entries and nothing queued, never when it has none, and
// revisit.share of its leases when it has both (a credit per host:
// each lease adds share, a revisit spends 1).
func (s *State) pickRevisit(h *host) bool {
	if s.sched == nil || h.rec.DueN == 0 {
		return false
	}
	if h.rec.Queued == 0 {
		return true
	}
	h.credit += s.sched.share
	if h.credit >= 1 {
		h.credit--
		return true
	}
	return false
}

// firstDue returns h's first entry in `due` and its seq; ok false when
// it has none.
func firstDue(sb schedBuckets, h *host) (e store.SchedEntry, seq uint64, ok bool, err error) {
	b := sb.due.Bucket([]byte(h.name))
	if b == nil {
		return e, 0, false, nil
	}
	k, v := b.Cursor().First()
	if len(k) != 8 {
		return e, 0, false, nil
	}
	e, err = store.DecodeSchedEntry(v)
	if err != nil {
		return e, 0, false, fmt.Errorf("due entry of %s: %w", h.name, err)
	}
	return e, store.BEUint64(k), true, nil
}

// leaseRevisitLocked leases h's first due entry, dropping those robots.txt
// disallows (up to maxRobotsSkips).
func (s *State) leaseRevisitLocked(sb schedBuckets, lb, db *bolt.Bucket, h *host, e store.SchedEntry, seq uint64, now, deadline time.Time) (*store.LeaseRecord, error) {
	for skips := 0; ; skips++ {
		if skips >= maxRobotsSkips {
			return nil, nil
		}
		if err := sb.deleteDue(h, seq); err != nil {
			return nil, err
		}
		s.dueN--
		s.dueLocked(e.Due, -1)
		if !s.robotsAllow(h, e.URL) {
			// Out of the schedule, done as robots.
			s.addScheduledLocked(e.Interval, -1)
			r := store.DoneRecord{Reason: store.DoneRobots, Finished: now}
			if err := db.Put(store.U64Key(store.URLHash(e.URL)), r.Encode()); err != nil {
				return nil, fmt.Errorf("put done: %w", err)
			}
			s.count[cDoneByReason+int(store.DoneFetched)]--
			s.count[cDoneByReason+int(store.DoneRobots)]++
			s.count[cRobotsDenied]++
			var ok bool
			var err error
			if e, seq, ok, err = firstDue(sb, h); err != nil || !ok {
				return nil, err
			}
			continue
		}
		l := &store.LeaseRecord{
			ID: s.nextLease, Host: h.name, Seq: seq, URL: e.URL, Depth: e.Depth,
			Deadline: deadline, EnqueuedAt: store.UnixTime(e.Due), Revisit: true, Sched: e,
		}
		s.nextLease++
		if err := lb.Put(store.U64Key(l.ID), l.Encode()); err != nil {
			return nil, fmt.Errorf("put lease: %w", err)
		}
		s.addLeaseLocked(h, l)
		s.redoneLocked(h, -1)
		s.count[cLeases]++
		s.count[cRevisits]++
		if s.maxInflight > 1 {
			h.rec.NextFetch = max(h.rec.NextFetch, store.StampOf(now.Add(s.cfg.Politeness.MinDelay)))
		}
		return l, nil
	}
}

// requeueRevisitLocked puts a revisit lease's entry back into `due` under
// its seq (expiry, release).
func (s *State) requeueRevisitLocked(tx *bolt.Tx, h *host, l *store.LeaseRecord) error {
	if err := schedBucketsOf(tx).putDue(h.name, l.Seq, l.Sched.Encode()); err != nil {
		return fmt.Errorf("requeue revisit: %w", err)
	}
	h.rec.DueN++
	s.dueN++
	s.dueLocked(l.Sched.Due, 1)
	s.redoneLocked(h, 1)
	return nil
}

// revisitFailedLocked keeps a failed revisit's entry, due again after its
// interval.
func (s *State) revisitFailedLocked(tx *bolt.Tx, h *host, l *store.LeaseRecord, now time.Time) error {
	s.redoneLocked(h, 1)
	e := l.Sched
	e.Due = now.Unix() + int64(e.Interval)
	s.addScheduledLocked(l.Sched.Interval, -1)
	return s.putScheduleLocked(schedBucketsOf(tx), h, &e)
}

// deleteDue deletes h's due entry seq, and h's due bucket with its last
// entry.
func (sb schedBuckets) deleteDue(h *host, seq uint64) error {
	b := sb.due.Bucket([]byte(h.name))
	if b == nil {
		return fmt.Errorf("%w: no due bucket for %s", ErrCorrupt, h.name)
	}
	if err := b.Delete(store.U64Key(seq)); err != nil {
		return fmt.Errorf("delete due: %w", err)
	}
	h.rec.DueN--
	h.dirty = true
	if h.rec.DueN == 0 {
		if err := sb.due.DeleteBucket([]byte(h.name)); err != nil {
			return fmt.Errorf("delete due bucket of %s: %w", h.name, err)
		}
	}
	return nil
}
