package frontier

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// Outcomes: applyOutcomeLocked handles one lease's outcome, top-down:
// the lease is found and dropped, robots.txt applied (robots.go), the
// host's politeness moved (politeness.go), and the URL finished, retried
// or put back in its host's queue (queue.go, inbox.go).

// applyOutcomeLocked applies one outcome and returns the host it touched.
func (s *State) applyOutcomeLocked(tx *bolt.Tx, o *Outcome, now time.Time, res *ApplyResult) (*host, error) {
	l := s.leases[o.LeaseID]
	if l == nil || int(o.Shard) != s.cfg.Frontier.Shard || o.URL != l.URL {
		// Unknown, finished, expired (ExpireLeasesBefore requeued it), or not
		// the URL leased under that ID: ignore. An outcome that comes
		// after its lease's deadline but before the lease was expired
		// counts: the fetch is done, and expiring the lease now would
		// only fetch the URL again.
		res.Stale++
		s.count[cClassBase+classStale]++
		return nil, nil
	}
	res.Outcomes++
	h := s.hosts[l.Host]
	s.dropLeaseLocked(h, l)
	h.dirty = true
	if o.Released {
		return h, s.releaseLocked(tx, h, l, o, now)
	}
	s.count[cClassBase+statusClass(o.Status)]++
	if l.Robots {
		return h, s.applyRobotsLocked(tx, h, o, now)
	}
	ret := tx.Bucket(store.BucketReturned)
	db := tx.Bucket(store.BucketDone)
	p := s.cfg.Politeness
	st := o.Status
	if l.Revisit && (st == 0 || st >= 500 || st == 429) {
		// A failed revisit: no retries; its entry is due again after its
		// interval (schedule.go). The host's politeness moves as for any
		// failure.
		s.politeAfterResponse(h, now, o.ResponseTime)
		if st == 429 || st == 503 {
			s.raiseBackoff(h, now, o.RetryAfter)
		} else if !o.Permanent {
			s.hostFailed(h, now)
		}
		return h, s.revisitFailedLocked(tx, h, l, now)
	}
	switch {
	case st == 429 || st == 503:
		// The server asks us to wait: the host slows down (throttled),
		// the URL's retry waits behind the host's other queued URLs, and
		// the attempt counts, so that neither a URL nor a host that keeps
		// asking holds the crawl open forever; the host is given up only
		// on evidence about the host (givesUp).
		s.politeAfterResponse(h, now, o.ResponseTime)
		attempts := l.Attempts + 1
		retry := int(attempts) <= p.MaxRetries
		s.throttled(h, now, o.RetryAfter, attempts, retry && h.rec.Queued == 0 && h.inflight == 0)
		if s.givesUp(h) {
			s.count[cHostsGivenUp]++
			if err := s.finishLocked(db, h, l.URL, st, store.DoneHostGaveUp, now); err != nil {
				return nil, err
			}
			return h, s.giveUpHostLocked(tx, h, store.DoneHostGaveUp, now)
		}
		if !retry {
			reason := store.DoneRateLimited
			if st == 503 {
				reason = store.DoneUnavailable
			}
			return h, s.finishLocked(db, h, l.URL, st, reason, now)
		}
		s.count[cRetries]++
		s.requeueLastLocked(h, l, attempts, now)
		return h, nil
	case st == 0 && o.Permanent:
		// No response and never one (the crawler's guard refused the
		// host's addresses): retrying would only ask again.
		s.count[cFailed]++
		return h, s.finishLocked(db, h, l.URL, st, store.DoneFailed, now)
	case st == 0 || st >= 500:
		s.politeAfterResponse(h, now, o.ResponseTime)
		s.hostFailed(h, now)
		attempts := l.Attempts + 1
		if int(attempts) > p.MaxRetries {
			s.count[cFailed]++
			return h, s.finishLocked(db, h, l.URL, st, store.DoneFailed, now)
		}
		s.count[cRetries]++
		return h, s.requeueLocked(ret, h, l, attempts)
	default:
		if !l.Fetched { // else its Fetched notice did
			s.politeAfterResponse(h, now, o.ResponseTime)
		}
		s.hostSucceeded(h)
		if l.Revisit && (st == 200 || st == 304) && l.Sched.Answered2xx() {
			// The URL's done record stays as the visit that last changed
			// it wrote it (a 2xx, DoneFetched): its schedule entry holds
			// the last visit. Rewriting it would be a random write into
			// the done set on every revisit, the most of them. After a
			// 4xx (an entry without validators or digest) it is
			// rewritten.
			s.countDoneLocked(h, store.DoneFetched)
		} else if err := s.finishLocked(db, h, l.URL, st, store.DoneFetched, now); err != nil {
			return nil, err
		}
		if s.sched != nil {
			return h, s.scheduleLocked(tx, h, l, o, now)
		}
		return h, nil
	}
}

// releaseLocked takes back a lease the crawler gave up without a result
// (it was stopped mid-fetch, or could not archive the page): the URL goes
// back to its place in its host's queue with its attempts unchanged, as
// an expired lease does but at once; a robots.txt lease lapses so the
// host gets a new one. Neither is the URL's fault, so neither spends its
// retries; a crawler that cannot archive stops, so this cannot loop. The
// host keeps its politeness delay: the request may have reached it.
func (s *State) releaseLocked(tx *bolt.Tx, h *host, l *store.LeaseRecord, o *Outcome, now time.Time) error {
	s.politeAfterResponse(h, now, o.ResponseTime)
	if l.Robots {
		return nil
	}
	if l.Revisit {
		return s.requeueRevisitLocked(tx, h, l)
	}
	return s.requeueLocked(tx.Bucket(store.BucketReturned), h, l, l.Attempts)
}

// giveUpHostLocked finishes every queued URL of h with reason, counted,
// and resets the host's back-off, so URLs admitted later start a new
// round of attempts. Two rules call it:
//
//   - doneRobotsUnavailable: the host's robots.txt stayed unavailable
//     through 1 + politeness.max_retries attempts. RFC 9309 forbids
//     crawling such a host, and waiting forever would keep a crawl from
//     ending.
//   - doneHostGaveUp: politeness.host_give_up distinct URLs of the host
//     answered 429 or 503 on their first try with no success between
//     (givesUp), each after the host's wait (throttled).
//   - doneFailed: the robots.txt fetch failed permanently (the crawler's
//     private network guard refused the host's addresses).
func (s *State) giveUpHostLocked(tx *bolt.Tx, h *host, reason store.DoneReason, now time.Time) error {
	qb, db := store.QueueBucketsOf(tx), tx.Bucket(store.BucketDone)
	n := 0
	for {
		hd, ok, err := s.peekLocked(qb, h)
		if err != nil || !ok {
			if err == nil && reason == store.DoneRobotsUnavailable && n > 0 {
				s.log.Warn("frontier: robots.txt unavailable; gave up the host's queued URLs",
					"host", h.name, "urls", n, "robots_status", h.rec.RobotsHTTP)
			}
			if err == nil && reason == store.DoneHostGaveUp {
				s.log.Warn("frontier: host answers 429/503 to URL after URL; gave up its queued URLs",
					"host", h.name, "urls", n, "throttled_urls", h.rec.BackoffLevel)
			}
			h.rec.BackoffLevel = 0
			h.dirty = true
			return err
		}
		if err := s.popLocked(qb, h, hd); err != nil {
			return err
		}
		if err := s.finishLocked(db, h, hd.rec.URL, 0, reason, now); err != nil {
			return err
		}
		switch reason {
		case store.DoneRobotsUnavailable:
			s.count[cRobotsGiveUp]++
		case store.DoneFailed:
			s.count[cFailed]++
		}
		n++
	}
}

// finishLocked records url as done.
func (s *State) finishLocked(db *bolt.Bucket, h *host, url string, status int, reason store.DoneReason, now time.Time) error {
	r := store.DoneRecord{Status: status, Reason: reason, Finished: now}
	if err := db.Put(store.U64Key(store.URLHash(url)), r.Encode()); err != nil {
		return fmt.Errorf("put done: %w", err)
	}
	if s.sched != nil && reason != store.DoneFetched {
		// Never scheduled: its sitemap hint, if any, goes (schedule.go).
		if b := db.Tx().Bucket(store.BucketHints); b != nil {
			if err := b.Delete(store.QueueKey(h.name, store.URLHash(url))); err != nil {
				return fmt.Errorf("delete hint: %w", err)
			}
		}
	}
	s.countDoneLocked(h, reason)
	return nil
}

// countDoneLocked counts a URL of h finished for reason.
func (s *State) countDoneLocked(h *host, reason store.DoneReason) {
	h.rec.Done++
	h.dirty = true
	s.doneN++
	s.count[cDone]++
	if int(reason) < doneReasonSlots {
		s.count[cDoneByReason+int(reason)]++
	}
}

// countDroppedLocked counts the links the crawler dropped from o's page
// (Outcome.LinksTooLong, LinksOverCap, LinksInvalid) as received and
// rejected by the rule that would have rejected them here, whether or not
// o's lease is still known, as the links o carries are.
func (s *State) countDroppedLocked(o *Outcome, res *ApplyResult) {
	for _, d := range [...]struct {
		r Reason
		n uint32
	}{{ReasonTooLong, o.LinksTooLong}, {ReasonLinksPerPage, o.LinksOverCap}, {ReasonInvalidURL, o.LinksInvalid}} {
		res.Received += int(d.n)
		res.Rejected[d.r] += d.n
		s.count[cLinksReceived] += uint64(d.n)
		s.count[reasonCounter(d.r)] += uint64(d.n)
	}
}
