package frontier

import (
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/robots"
)

// Admission: the links of an Apply pass the stateful scope rules, the
// filter's test-and-set and the audit sample (audit.go), and the new ones
// join their host's queue through the inbox (inbox.go).

// candidate is a link that passed the stateful rules and goes to the filter.
type candidate struct {
	pl    *PreparedLink
	h     *host // the link's host when admitLocked looked it up and it is known
	depth uint32
	seed  bool
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
	var hints []*PreparedLink // duplicates with a sitemap lastmod (continuous mode)
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
			if seen[i] && pl.LastMod != 0 && s.sched != nil {
				hints = append(hints, pl)
			}
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
		if (pl.ChangeFreq > 0 || pl.Sitemap) && s.sched != nil {
			if err := s.putHintLocked(tx, h, pl); err != nil {
				return nil, err
			}
		}
	}
	if len(hints) > 0 {
		more, err := s.sitemapDueLocked(tx, hints)
		if err != nil {
			return nil, err
		}
		for _, h := range more {
			if h.applyGen != s.applyGen {
				h.applyGen = s.applyGen
				touched = append(touched, h)
			}
		}
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

func (s *State) countLinksLocked(res *ApplyResult) {
	s.count[cLinksReceived] += uint64(res.Received)
	s.count[cAdmitted] += uint64(res.Admitted)
	s.count[cDuplicates] += uint64(res.Duplicates)
	s.count[cRobotsDenied] += uint64(res.RobotsDenied)
	for r, n := range res.Rejected {
		s.count[reasonCounter(Reason(r))] += uint64(n)
	}
}
