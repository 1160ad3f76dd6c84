package frontier

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/robots"
)

// Leasing: Lease takes the head of each ready host's queue (queue.go),
// moves it to `leases` and holds the host until its politeness delay has
// passed (politeness.go); expired leases go back to their host's head.

// maxRobotsSkips bounds how many robots-disallowed URLs one Lease call drops
// from a single host's queue before moving on, so a huge disallowed queue
// cannot stall a call.
const maxRobotsSkips = 256

// leaseHeap orders the leases out by deadline.
type leaseHeap []*store.LeaseRecord

func (q leaseHeap) Len() int           { return len(q) }
func (q leaseHeap) Less(i, j int) bool { return q[i].Deadline.Before(q[j].Deadline) }
func (q leaseHeap) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *leaseHeap) Push(x any)        { *q = append(*q, x.(*store.LeaseRecord)) }
func (q *leaseHeap) Pop() any {
	old := *q
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return l
}

// Lease grants up to max leases (capped at frontier.max_leases_per_reply)
// on hosts politeness lets be fetched now: one per host per call, or, when
// a host has slots left (max_inflight_per_host) and no min_delay to keep
// between its leases, as many as it has free slots.
// A host whose robots.txt is unknown, unavailable or older than robots.ttl
// gets a robots.txt lease first. Queued URLs robots.txt disallows are
// finished (reason robots) and counted on the way. The leases are
// written to the open transaction and committed with the next commit or
// Flush (see updateLocked), not before Lease returns.
func (s *State) Lease(max int) ([]Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return nil, err
	}
	s.tuneLocked(s.now())
	if c := s.cfg.Frontier.MaxLeasesPerReply; c > 0 && max > c {
		max = c
	}
	if max <= 0 || len(s.ready) == 0 {
		return nil, nil
	}
	now := s.now()
	nowStamp := store.StampOf(now)
	if s.ready[0].eligibleAt() > nowStamp {
		return nil, nil
	}
	var out []Lease
	var touched []*host
	err := s.updateLazyLocked(func(tx *bolt.Tx) error {
		qb := store.QueueBucketsOf(tx)
		lb := tx.Bucket(store.BucketLeases)
		db := tx.Bucket(store.BucketDone)
		var again map[*host]bool // hosts put back for another lease in this call
		for len(out) < max && len(s.ready) > 0 && s.ready[0].eligibleAt() <= nowStamp {
			h := heap.Pop(&s.ready).(*host)
			s.noteReadyLocked(h)
			if !again[h] {
				touched = append(touched, h)
			}
			l, err := s.leaseHostLocked(qb, lb, db, h, now)
			if err != nil {
				return err
			}
			if l == nil {
				continue
			}
			out = append(out, leaseOf(l))
			// A host with slots left and no delay to keep (min_delay 0)
			// may take another lease now: one lease per host per call
			// fed a 16-slot host one request round trip at a time.
			if s.wantsReady(h) && h.eligibleAt() <= nowStamp {
				if again == nil {
					again = make(map[*host]bool)
				}
				again[h] = true
				heap.Push(&s.ready, h)
				s.noteReadyLocked(h)
			}
		}
		return s.putMetaLocked(tx, touched)
	})
	if err != nil {
		return nil, fmt.Errorf("frontier: lease: %w", err)
	}
	for _, h := range touched {
		s.fixHostLocked(h)
	}
	return out, nil
}

// leaseHostLocked makes one lease for h, or none when its queue held only
// URLs robots.txt disallows (up to maxRobotsSkips of them).
func (s *State) leaseHostLocked(qb store.QueueBuckets, lb, db *bolt.Bucket, h *host, now time.Time) (*store.LeaseRecord, error) {
	deadline := now.Add(s.cfg.Frontier.LeaseTimeout)
	// A revisit (continuous mode: schedule.go) or the head of the queue.
	var due store.SchedEntry
	var dueSeq uint64
	revisit := false
	if s.sched != nil {
		sb := schedBucketsOf(qb.Returned.Tx())
		if err := s.promoteLocked(sb, h, now); err != nil {
			return nil, err
		}
		if revisit = s.pickRevisit(h); revisit {
			var ok bool
			var err error
			if due, dueSeq, ok, err = firstDue(sb, h); err != nil {
				return nil, err
			}
			if !ok {
				s.log.Warn("frontier: host due count disagrees with its due entries", "host", h.name, "due", h.rec.DueN)
				s.dueN -= int64(h.rec.DueN)
				h.rec.DueN = 0
				h.dirty = true
				return nil, nil
			}
		} else if h.rec.Queued == 0 {
			return nil, nil
		}
	}
	var hd headOf
	ok := true
	if !revisit {
		var err error
		if hd, ok, err = s.peekLocked(qb, h); err != nil {
			return nil, err
		}
	}
	if !ok {
		// The record says queued but the queue is empty: repair the count
		// rather than offering the host forever.
		s.log.Warn("frontier: host queue count disagrees with queue", "host", h.name, "queued", h.rec.Queued)
		s.queued -= int64(h.rec.Queued)
		h.rec.Queued = 0
		h.dirty = true
		return nil, nil
	}
	if s.robotsDue(h, now) {
		if h.robotsInflight {
			return nil, nil
		}
		scheme, url := "http", hd.rec.URL
		if revisit {
			url = due.URL
		}
		if strings.HasPrefix(url, "https:") {
			scheme = "https"
		}
		l := &store.LeaseRecord{ID: s.nextLease, Host: h.name, URL: scheme + "://" + h.name + "/robots.txt", Robots: true, Deadline: deadline}
		s.nextLease++
		if err := lb.Put(store.U64Key(l.ID), l.Encode()); err != nil {
			return nil, fmt.Errorf("put lease: %w", err)
		}
		h.robotsInflight = true
		s.addLeaseLocked(h, l)
		s.count[cRobotsLeases]++
		return l, nil
	}
	if revisit {
		return s.leaseRevisitLocked(schedBucketsOf(qb.Returned.Tx()), lb, db, h, due, dueSeq, now, deadline)
	}
	var err error
	for skips := 0; ok; skips++ {
		if skips >= maxRobotsSkips {
			return nil, nil
		}
		if err := s.popLocked(qb, h, hd); err != nil {
			return nil, err
		}
		rec := hd.rec
		if s.cfg.Robots.Obey && h.rules != nil && !h.rules.Test(s.agent, robots.PathOf(rec.URL)).Allowed {
			if err := s.finishLocked(db, h, rec.URL, 0, store.DoneRobots, now); err != nil {
				return nil, err
			}
			s.count[cRobotsDenied]++
			if hd, ok, err = s.peekLocked(qb, h); err != nil {
				return nil, err
			}
			continue
		}
		l := &store.LeaseRecord{
			ID: s.nextLease, Host: h.name, Seq: hd.seq, URL: rec.URL, Depth: rec.Depth,
			Deadline: deadline, Attempts: rec.Attempts, EnqueuedAt: rec.EnqueuedAt, Hops: rec.Hops,
		}
		s.nextLease++
		if err := lb.Put(store.U64Key(l.ID), l.Encode()); err != nil {
			return nil, fmt.Errorf("put lease: %w", err)
		}
		s.addLeaseLocked(h, l)
		s.count[cLeases]++
		// With more than one lease per host allowed, keep min_delay
		// between the leases themselves.
		if s.maxInflight > 1 {
			h.rec.NextFetch = max(h.rec.NextFetch, store.StampOf(now.Add(s.cfg.Politeness.MinDelay)))
		}
		return l, nil
	}
	return nil, nil
}

func (s *State) addLeaseLocked(h *host, l *store.LeaseRecord) {
	h.inflight++
	s.leases[l.ID] = l
	heap.Push(&s.deadlines, l)
}

// Fetched takes a crawler's notice that its request for a lease's URL is
// over, ahead of the outcome (FetchNotice): the lease stops counting
// against max_inflight_per_host and the host's next fetch is set as for
// a response (politeAfterFetched), so the host's next URL can be leased
// while the outcome is still on its way through the stream. Nothing is
// written: the outcome alone finishes the lease, and a reopened State
// counts every lease as in flight again. It reports whether a slot was
// freed; a notice for an unknown, finished, already noticed or robots.txt
// lease, or another shard's, changes nothing.
func (s *State) Fetched(n FetchNotice) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checkLocked() != nil || int(n.Shard) != s.cfg.Frontier.Shard {
		return false
	}
	l := s.leases[n.LeaseID]
	if l == nil || l.Fetched || l.Robots {
		return false
	}
	h := s.hosts[l.Host]
	l.Fetched = true
	h.inflight--
	s.politeAfterFetched(h, s.now(), n.ResponseTime)
	s.fixHostLocked(h)
	return true
}

// dropLeaseLocked forgets lease l in memory, and in the file when the
// update it is part of ends (flushLeaseDropsLocked).
func (s *State) dropLeaseLocked(h *host, l *store.LeaseRecord) {
	s.leaseDrops = append(s.leaseDrops, l.ID)
	delete(s.leases, l.ID)
	if !l.Fetched {
		h.inflight--
	}
	if l.Robots {
		h.robotsInflight = false
	}
}

// flushLeaseDropsLocked deletes the lease records dropLeaseLocked
// dropped in this update, highest ID first. Leases granted since the last
// commit sit in one unsplit bbolt node, in ID order, and outcomes mostly
// come in that order: bbolt deletes a key from a node by moving every key
// after it, so lowest first cost O(n²) moves for n leases (15% of the
// CPU time of BenchmarkRevisit at 20M done URLs, 5,000 leases a reply),
// highest first O(n).
func (s *State) flushLeaseDropsLocked(tx *bolt.Tx) error {
	if len(s.leaseDrops) == 0 {
		return nil
	}
	slices.Sort(s.leaseDrops)
	lb := tx.Bucket(store.BucketLeases)
	for i := len(s.leaseDrops) - 1; i >= 0; i-- {
		if err := lb.Delete(store.U64Key(s.leaseDrops[i])); err != nil {
			return fmt.Errorf("delete lease: %w", err)
		}
	}
	s.leaseDrops = s.leaseDrops[:0]
	return nil
}

// expireLeases (tests) returns every lease past its deadline to its host queue
// (robots.txt leases simply lapse, so the host gets a new one) and
// reports how many expired.
func (s *State) expireLeases() (int, error) { return s.ExpireLeasesBefore(s.now()) }

// ExpireLeasesBefore returns to their queues the leases whose deadline is not
// after cutoff. The service passes how far its ingest has got, so a lease
// whose outcome was published in time but still waits in the stream is
// not expired (and its URL fetched again) just because the frontier is
// behind.
func (s *State) ExpireLeasesBefore(cutoff time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return 0, err
	}
	s.tuneLocked(s.now())
	// Drop heap entries of leases already finished.
	for len(s.deadlines) > 0 && s.leases[s.deadlines[0].ID] != s.deadlines[0] {
		heap.Pop(&s.deadlines)
	}
	if len(s.deadlines) == 0 || s.deadlines[0].Deadline.After(cutoff) {
		return 0, nil
	}
	n := 0
	var touched []*host
	err := s.updateLazyLocked(func(tx *bolt.Tx) error {
		ret := tx.Bucket(store.BucketReturned)
		for len(s.deadlines) > 0 && !s.deadlines[0].Deadline.After(cutoff) {
			l := heap.Pop(&s.deadlines).(*store.LeaseRecord)
			if s.leases[l.ID] != l {
				continue // finished earlier
			}
			h := s.hosts[l.Host]
			touched = append(touched, h)
			s.dropLeaseLocked(h, l)
			if l.Revisit {
				if err := s.requeueRevisitLocked(tx, h, l); err != nil {
					return err
				}
			} else if !l.Robots {
				if err := s.requeueLocked(ret, h, l, l.Attempts); err != nil {
					return err
				}
			}
			n++
			s.count[cExpired]++
		}
		return s.putMetaLocked(tx, touched)
	})
	if err != nil {
		return 0, fmt.Errorf("frontier: expire leases: %w", err)
	}
	for _, h := range touched {
		s.fixHostLocked(h)
	}
	return n, nil
}

// leaseOf is l as Lease returns it.
func leaseOf(l *store.LeaseRecord) Lease {
	out := Lease{ID: l.ID, URL: l.URL, Depth: l.Depth, Robots: l.Robots, Deadline: l.Deadline, Hops: l.Hops}
	if l.Revisit {
		out.Revisit, out.ETag, out.Digest = true, l.Sched.ETag, l.Sched.Digest
		out.LastModified, out.ArchivedAt = store.UnixTime(l.Sched.LastMod), l.Sched.ArchivedAt.Time()
	}
	return out
}
