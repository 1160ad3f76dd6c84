package frontier

import (
	"fmt"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/stats"
)

// auditSeed prefixes every key before the audit hash, so that the sample is
// independent of dedup.Hash (plain xxhash64 of the key) and therefore of
// the filter's bit positions.
const auditSeed = "trawl-audit/1\x00"

// auditHash is the hash that decides whether a key is in the audit sample.
func auditHash(key string) uint64 {
	d := xxhash.New()
	d.WriteString(auditSeed)
	d.WriteString(key)
	return d.Sum64()
}

// auditThreshold maps a fraction to the cut: a key is sampled when its
// audit hash is below cut, or always when all is true (fraction >= 1).
func auditThreshold(fraction float64) (cut uint64, all bool) {
	switch {
	case fraction >= 1:
		return 0, true
	case fraction <= 0 || math.IsNaN(fraction):
		return 0, false
	}
	return uint64(fraction * (1 << 64)), false
}

func (sc *scope) sampled(h uint64) bool { return sc.auditAll || h < sc.auditCut }

// auditStatus computes the audit's verdict from the counters.
func auditStatus(c *counters, fraction, impliedFP float64) AuditStatus {
	a := AuditStatus{
		Fraction:   fraction,
		SampledNew: c[cSampledNew],
		FPSkips:    c[cFPSkips],
		ImpliedFP:  impliedFP,
		Rescued:    c[cRescued],
	}
	a.Rate, a.Low, a.High = stats.Wilson(a.FPSkips, a.SampledNew+a.FPSkips)
	if fraction > 0 {
		// New keys offered so far: those the filter admitted, plus those
		// it wrongly skipped, estimated from the sample.
		newKeys := float64(c[cFilterNew]) + float64(a.FPSkips)/math.Min(fraction, 1)
		a.Projected = a.Rate * newKeys
	}
	return a
}

// The audit sample's new keys.
//
// A sampled key the filter calls new is admitted, and so written to the
// inbox, in its Apply's transaction. Writing it to `truth` there too was
// a random page of the bucket per sampled key (about 31 in an Apply of
// 10,000 links) and their branch pages: at 20M URLs over 100k hosts such
// an Apply wrote 94 pages, 68 at 2M, and 30 at every size without the
// audit.
// So it is pending, in memory, until Compact writes the pending keys, in
// key order, before it moves the inbox; a lease that takes the URL from
// the inbox writes its key first. Until then the inbox holds the URL, and
// Open takes the sampled URLs among those still queued in the inbox as
// pending again, so a crash loses none. Memory: one key per sampled new
// URL since the last compaction (1/64 of them by default).
//
// The sample is keyed by the key's dedup hash (store.URLHash, as `done` is),
// the 64 bits the filter itself tells keys apart by: two URLs with one
// hash are one key to the filter, so they are one in the sample too, and
// the sample still counts exactly the filter's false positives. Keyed by
// the URL (schemas 1 to 3) it took ~115 bytes per key, and Compact's
// sorted puts went to every page of it (8.7k pages at 20M URLs over 100k
// hosts); keyed by the hash, ~35 bytes per key and a third of the pages.

// pendTruth marks the sampled, new key whose dedup hash is h as pending.
func (s *State) pendTruth(h uint64) {
	if s.truthPending == nil {
		s.truthPending = make(map[uint64]struct{})
	}
	s.truthPending[h] = struct{}{}
}

// inTruth reports whether the exact sample holds the key whose dedup hash
// is h, pending or written.
func (s *State) inTruth(truth *bolt.Bucket, h uint64) bool {
	if _, ok := s.truthPending[h]; ok {
		return true
	}
	return has(truth, store.U64Key(h))
}

// writeTruthKeyLocked writes url's key to truth if it is pending: a lease
// is taking the URL from the inbox.
func (s *State) writeTruthKeyLocked(truth *bolt.Bucket, url string) error {
	if len(s.truthPending) == 0 {
		return nil
	}
	h := store.URLHash(url)
	if _, ok := s.truthPending[h]; !ok {
		return nil
	}
	if err := truth.Put(store.U64Key(h), nil); err != nil {
		return fmt.Errorf("put truth: %w", err)
	}
	delete(s.truthPending, h)
	return nil
}

// writeTruthLocked writes every pending key to truth, in key order, in
// transactions of compactChunk keys.
func (s *State) writeTruthLocked() error {
	if len(s.truthPending) == 0 {
		return nil
	}
	keys := make([]uint64, 0, len(s.truthPending))
	for k := range s.truthPending {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for len(keys) > 0 {
		n := min(len(keys), s.knobs.compactChunk)
		err := s.updateLocked(func(tx *bolt.Tx) error {
			truth := tx.Bucket(store.BucketTruth)
			for _, k := range keys[:n] {
				if err := truth.Put(store.U64Key(k), nil); err != nil {
					return fmt.Errorf("put truth: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys[:n] {
			delete(s.truthPending, k)
		}
		keys = keys[n:]
	}
	return nil
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
		s.folds.noteSkipLocked(pl.Hash) // a fold under way keeps it seen (fold.go)
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
