package frontier

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
)

// Apply is one step of the state machine for a batch of what crawlers
// sent: its links are admitted (admit.go) and its outcomes applied
// (outcome.go) in one bbolt transaction, committed with the host records
// they touched (commit.go).

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
