package frontier

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/robots"
)

// ApplyResult says what one Apply did.
type ApplyResult struct {
	Received     int                // links in the prepared batches
	Admitted     int                // URLs enqueued (including rescued ones)
	Duplicates   int                // links the filter (and the audit, when sampled) called seen
	FPSkips      int                // sampled links the filter wrongly called seen
	Rescued      int                // of FPSkips, enqueued anyway (audit.rescue)
	RobotsDenied int                // links robots.txt disallows (host robots.txt already known)
	Rejected     [NumReasons]uint32 // by every rule, stateless and stateful
	Outcomes     int                // outcomes applied
	Stale        int                // outcomes ignored: unknown or expired lease, other shard
}

// candidate is a link that passed the stateful rules and goes to the filter.
type candidate struct {
	pl    *PreparedLink
	h     *host // the link's host when admitLocked looked it up and it is known
	depth uint32
	seed  bool
}

// applyScratch is Apply's working memory, kept from one call to the next:
// grown afresh by every Apply it was an eighth of the bytes the scale
// benchmark's ingest allocated.
type applyScratch struct {
	cands     []candidate
	hs, fresh []uint64
	seen      []bool
}

// keepScratch is s emptied, and its elements zeroed, to be kept for the
// next Apply, or nil when it has room for more than most elements (a
// sitemap's worth is not kept).
func keepScratch[T any](s []T, most int) []T {
	clear(s) // pointers, URLs
	if cap(s) > most {
		return nil
	}
	return s[:0]
}

// keepLinks is the most links applyScratch keeps room for.
const keepLinks = 1 << 16

// Apply commits the effects of prepared link batches and outcomes in one
// bbolt transaction, in order: the stateful rules (seed hosts only, max
// pages per host, a known robots.txt), the filter (TestAndAddHashes over
// every surviving link), the audit, queue inserts, the dedup journal, then
// the outcomes (lease completion or requeue, politeness and robots
// updates), and the counters.
//
// A returned error is fatal: the in-memory filter and host state may hold
// what the file does not. The State then refuses further writes
// (ErrFailed); the caller must stop, Close and reopen it, and let
// unacknowledged messages be redelivered.
func (s *State) Apply(links []Prepared, outcomes []Outcome) (ApplyResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res ApplyResult
	if err := s.checkLocked(); err != nil {
		return res, err
	}
	now := s.now()
	var touched []*host
	s.applyGen++
	err := s.updateLocked(func(tx *bolt.Tx) error {
		var err error
		if touched, err = s.applyLinksLocked(tx, links, now, &res); err != nil {
			return err
		}
		for i := range outcomes {
			o := &outcomes[i]
			s.countDroppedLocked(o, &res)
			h, err := s.applyOutcomeLocked(tx, o, now, &res)
			if err != nil {
				return err
			}
			if h != nil {
				touched = append(touched, h)
			}
		}
		// The retries of throttled URLs (requeueLastLocked).
		if err := s.flushInboxLocked(tx.Bucket(store.BucketInbox)); err != nil {
			return err
		}
		return s.putMetaLocked(tx, touched)
	})
	if err != nil {
		return ApplyResult{}, fmt.Errorf("frontier: apply: %w", err)
	}
	for _, h := range touched {
		s.fixHostLocked(h)
	}
	return res, nil
}

func (s *State) applyLinksLocked(tx *bolt.Tx, links []Prepared, now time.Time, res *ApplyResult) ([]*host, error) {
	sc := &s.scratch
	cands, touched := s.admitLocked(sc.cands[:0], links, res)
	defer func() { sc.cands = keepScratch(cands, keepLinks) }()
	if len(cands) == 0 {
		s.countLinksLocked(res)
		return touched, nil
	}
	hs := slices.Grow(sc.hs[:0], len(cands))
	for i := range cands {
		hs = append(hs, cands[i].pl.Hash)
	}
	seen := slices.Grow(sc.seen[:0], len(cands))[:len(cands)]
	clear(seen)
	s.filter.TestAndAddHashes(hs, seen)
	newHashes := sc.fresh[:0]
	defer func() {
		sc.hs, sc.seen, sc.fresh = keepScratch(hs, keepLinks), keepScratch(seen, keepLinks), keepScratch(newHashes, keepLinks)
	}()
	truth := tx.Bucket(store.BucketTruth)
	maxPages := uint64(max(0, s.cfg.Scope.MaxPagesPerHost))
	for i := range cands {
		c := &cands[i]
		pl := c.pl
		if !seen[i] {
			newHashes = append(newHashes, pl.Hash)
			s.count[cFilterNew]++
		}
		enqueue, err := s.auditLocked(truth, pl, seen[i], res)
		if err != nil {
			return nil, err
		}
		if !enqueue {
			continue
		}
		h := c.h
		if h == nil {
			h = s.getHostLocked(pl.Host)
		}
		if maxPages > 0 && h.rec.Admitted >= maxPages {
			// The batch crossed the cap: the key is in the filter (and
			// journaled below) but not queued; counted as rejected.
			res.Rejected[ReasonMaxPagesPerHost]++
			continue
		}
		if h.applyGen != s.applyGen {
			h.applyGen = s.applyGen
			touched = append(touched, h)
		}
		s.enqueueLocked(h, pl.Key, c.depth, pl.Hops, now)
		res.Admitted++
	}
	if err := s.flushInboxLocked(tx.Bucket(store.BucketInbox)); err != nil {
		return nil, err
	}
	if err := s.filter.AppendJournal(tx, newHashes); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	s.journaled += int64(len(newHashes))
	s.countLinksLocked(res)
	return touched, nil
}

// admitLocked counts the stateless rejections of links, marks seed hosts,
// and applies the stateful rules in order (seed hosts only, max pages per
// host, a known robots.txt): it appends the links left for the filter to
// cands and returns them and the hosts it changed.
func (s *State) admitLocked(cands []candidate, links []Prepared, res *ApplyResult) (_ []candidate, touched []*host) {
	maxPages := uint64(max(0, s.cfg.Scope.MaxPagesPerHost))
	// Only these rules need the link's host here; otherwise the links the
	// filter passes look it up (a lookup in a map of a million hosts is a
	// cache miss or two).
	lookup := maxPages > 0 || s.cfg.Robots.Obey
	for i := range links {
		p := &links[i]
		res.Received += p.Received
		for r, n := range p.Rejected {
			res.Rejected[r] += n
		}
		if p.Seeds {
			for j := range p.Links {
				h := s.getHostLocked(p.Links[j].Host)
				if !h.rec.Seed {
					s.loosened++
					h.rec.Seed = true
					h.dirty = true
					s.seedNames[hostName(h.name)] = true
					touched = append(touched, h)
				}
			}
		}
		for j := range p.Links {
			pl := &p.Links[j]
			var h *host
			if lookup {
				h = s.findHostLocked(pl.Host)
			}
			if r, ok := s.scopeRuleLocked(pl, p.Seeds, h, maxPages); ok {
				res.Rejected[r]++
				continue
			}
			switch {
			case h != nil && s.cfg.Robots.Obey && h.rules != nil && h.rec.RobotsStatus == store.RobotsOK &&
				!h.rules.Test(s.agent, robots.PathOf(pl.Key)).Allowed:
				res.RobotsDenied++
			default:
				cands = append(cands, candidate{pl: pl, h: h, depth: p.Depth, seed: p.Seeds})
			}
		}
	}
	return cands, touched
}

// scopeRuleLocked applies the stateful scope rules, in order, to a
// prepared link of a batch of seeds or not, whose host is h (nil: unknown,
// or not looked up): seed hosts only (scope.seed_hosts_only: the host
// is a seed host, a subdomain of one, or under scope.allowed_domains),
// then max pages per host (maxPages: scope.max_pages_per_host, 0 none).
// It returns the rule that drops the link. Apply and Explain both ask it.
func (s *State) scopeRuleLocked(pl *PreparedLink, seeds bool, h *host, maxPages uint64) (Reason, bool) {
	switch {
	case !seeds && s.cfg.Scope.SeedHostsOnly && !pl.Allowed && !s.isSeedish(hostName(pl.Host)):
		return ReasonOffSeedHosts, true
	case h != nil && maxPages > 0 && h.rec.Admitted >= maxPages:
		return ReasonMaxPagesPerHost, true
	}
	return 0, false
}

// auditLocked records what the exact sample says of a link the filter
// answered seen or new, and says whether to enqueue it: a new key, or a
// false-positive skip the audit rescues (audit.rescue).
func (s *State) auditLocked(truth *bolt.Bucket, pl *PreparedLink, seen bool, res *ApplyResult) (enqueue bool, err error) {
	if !s.scope.sampled(pl.Audit) {
		if seen {
			res.Duplicates++
		}
		return !seen, nil
	}
	switch {
	case !seen:
		// Enqueued, so it is in the inbox until Compact writes it to
		// truth (or a lease does).
		s.count[cSampledNew]++
		s.pendTruth(pl.Hash)
		return true, nil
	case !pl.inTruth && !s.inTruth(truth, pl.Hash):
		// The filter says seen, the exact sample says new: a
		// false-positive skip. Record the key so it counts once.
		res.FPSkips++
		s.count[cFPSkips]++
		if err := truth.Put(store.U64Key(pl.Hash), nil); err != nil {
			return false, fmt.Errorf("put truth: %w", err)
		}
		if s.cfg.Audit.Rescue {
			res.Rescued++
			s.count[cRescued]++
			return true, nil
		}
		return false, nil
	default:
		res.Duplicates++
		return false, nil
	}
}

func (s *State) countLinksLocked(res *ApplyResult) {
	s.count[cLinksReceived] += uint64(res.Received)
	s.count[cAdmitted] += uint64(res.Admitted)
	s.count[cDuplicates] += uint64(res.Duplicates)
	s.count[cRobotsDenied] += uint64(res.RobotsDenied)
	for r, n := range res.Rejected {
		s.count[reasonCounter(Reason(r))] += uint64(n)
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
	if err := s.dropLeaseLocked(tx.Bucket(store.BucketLeases), h, l); err != nil {
		return nil, err
	}
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
		return h, s.finishLocked(db, h, l.URL, st, store.DoneFetched, now)
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
	return s.requeueLocked(tx.Bucket(store.BucketReturned), h, l, l.Attempts)
}

// applyRobotsLocked stores the result of a robots.txt lease: RFC 9309 2xx
// parse, 4xx allow all, anything else unavailable (disallow all; the host
// backs off and the next lease retries robots.txt). 429 counts as
// unavailable, as Google's crawler treats it: "slow down" is no licence to
// crawl everything.
func (s *State) applyRobotsLocked(tx *bolt.Tx, h *host, o *Outcome, now time.Time) error {
	rb := tx.Bucket(store.BucketRobots)
	if h.rec.RobotsStatus == store.RobotsOK {
		s.loosened++ // rules that denied links are replaced
	}
	h.rec.RobotsHTTP = uint32(min(max(o.Status, 0), 999))
	h.rec.RobotsFetched = store.StampOf(now)
	st := o.Status
	switch {
	case st >= 200 && st < 300:
		body := o.Body
		if len(body) > robots.MaxBytes {
			body = body[:robots.MaxBytes]
		}
		h.rec.RobotsStatus = store.RobotsOK
		h.rules = robots.FromResponse(st, body)
		if err := rb.Put([]byte(h.name), body); err != nil {
			return fmt.Errorf("put robots: %w", err)
		}
		s.politeAfterResponse(h, now, o.ResponseTime)
		s.hostSucceeded(h)
	case st >= 400 && st < 500 && st != 429:
		h.rec.RobotsStatus = store.RobotsAllowAll
		h.rules = nil
		if err := rb.Delete([]byte(h.name)); err != nil {
			return fmt.Errorf("delete robots: %w", err)
		}
		s.politeAfterResponse(h, now, o.ResponseTime)
		s.hostSucceeded(h)
	case st == 0 && o.Permanent:
		// The host cannot be reached (the crawler's guard refused its
		// addresses): its queued URLs fail now, not after max_retries
		// robots.txt attempts.
		h.rec.RobotsStatus = store.RobotsUnavailable
		h.rules = nil
		return s.giveUpHostLocked(tx, h, store.DoneFailed, now)
	default:
		h.rec.RobotsStatus = store.RobotsUnavailable
		h.rules = nil
		s.politeAfterResponse(h, now, o.ResponseTime)
		s.raiseBackoff(h, now, o.RetryAfter)
		if int(h.rec.BackoffLevel) > s.cfg.Politeness.MaxRetries {
			return s.giveUpHostLocked(tx, h, store.DoneRobotsUnavailable, now)
		}
	}
	return nil
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

// has reports whether b holds key. Not b.Get(key) != nil: a key put with
// an empty value earlier in the same transaction reads back as nil.
func has(b *bolt.Bucket, key []byte) bool { return hasKey(b.Cursor(), key) }

// hasKey is has with a cursor the caller keeps for many lookups.
func hasKey(c *bolt.Cursor, key []byte) bool {
	k, _ := c.Seek(key)
	return k != nil && bytes.Equal(k, key)
}

func hashKey(url string) uint64 { return dedup.Hash([]byte(url)) }
