package frontier

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
)

// Folding: a scalable filter's older sub-filters folded into one
// (dedup.Chain.BeginFold), in the background, with the state free while
// the keys are fed and between the parts that store the folded filter.

// errFoldStopped ends a fold that Close stopped.
var errFoldStopped = errors.New("frontier: fold stopped by close")

// folds runs one fold at a time, in a goroutine of the State's that
// CheckpointIfDue starts and Close waits for.
type folds struct {
	run     sync.Mutex  // held by the fold running
	start   sync.Mutex  // orders starting a fold against stop
	stopped atomic.Bool // Close: a fold gives up at its next step
	running atomic.Bool // a background fold is started and not done
	wg      sync.WaitGroup
	// tooLargeLogged: the fold refused past max_memory was logged once.
	tooLargeLogged atomic.Bool
	// inRound (guarded by State.mu): a checkpoint is between its parts. A
	// fold commits outside a checkpoint round, so that a round's parts
	// all write the same sub-filters.
	inRound bool
	// active and late (guarded by State.mu): from BeginFold until the
	// fold ends, the keys the audit's sample recorded as false-positive
	// skips (noteSkipLocked). Nothing else holds such a key but truth,
	// and the filter held it only by a false positive, maybe in a
	// sub-filter the fold replaces: the fold adds it before it stores
	// its last part, so that every truth key still tests seen.
	active bool
	late   []uint64
}

// noteSkipLocked records a false-positive skip's key (truth holds it now)
// for the fold under way, if any. State.mu must be held.
func (f *folds) noteSkipLocked(h uint64) {
	if f.active {
		f.late = append(f.late, h)
	}
}

// stop makes a running fold give up (the chain stays as it was) and
// waits for it; no fold starts afterwards.
func (f *folds) stop() {
	f.start.Lock()
	f.stopped.Store(true)
	f.start.Unlock()
	f.wg.Wait()
}

// startFold starts a fold in the background when frontier.filter.fold is
// on and the chain advises one, unless one runs already. Its errors are
// logged: the chain stays as it was, and the next CheckpointIfDue tries
// again.
func (s *State) startFold() {
	if !s.cfg.Frontier.Filter.Fold || s.mode != dedup.ModeScalable || s.readOnly {
		return
	}
	s.mu.Lock()
	ch, ok := s.filter.(*dedup.Chain)
	advised := ok && s.checkLocked() == nil && ch.FoldAdvised()
	s.mu.Unlock()
	if !advised {
		return
	}
	f := &s.folds
	f.start.Lock()
	defer f.start.Unlock()
	if f.stopped.Load() || !f.running.CompareAndSwap(false, true) {
		return
	}
	f.wg.Go(func() {
		defer f.running.Store(false)
		st, did, err := s.Fold()
		switch {
		case err != nil:
			s.log.Warn("frontier: fold of the scalable filter failed; the chain stays as it was", "error", err)
		case did:
			s.log.Info("frontier: folded the scalable filter", "subfilters", st.Folded, "keys", st.Kept,
				"bytes", st.Sizing.Bytes, "old_bytes", st.OldBits/8, "took", st.Duration.Round(time.Millisecond))
		}
	})
}

// Fold folds every sub-filter of a scalable filter but the newest into
// one when the chain advises it (dedup.Chain.FoldAdvised: after each
// growth of a chain sized by budget, from three sub-filters on for one
// sized by growth index); did reports whether it did. It is the background
// fold's body, and runs one at a time:
//
//  1. under the state's lock, it commits the open transaction (so every
//     admitted key's transaction has committed), begins the fold and opens
//     a read transaction;
//  2. without the lock, it feeds the fold every hash the file holds
//     (store.ForEachHeldHash) from that transaction;
//  3. it stores the folded filter in transactions of
//     frontier.checkpoint_part, letting go of the state between them as a
//     checkpoint does (yieldLocked);
//  4. it commits the fold in a transaction of its own, which switches the
//     chain to the folded filter.
//
// A crash at any step leaves the chain as it was, or folded: both hold
// every key. A key admitted after step 1 is in the newest sub-filter,
// which the fold keeps. A fixed filter, a chain that does not advise a
// fold, or a fold past frontier.filter.max_memory is no fold (did false,
// no error).
func (s *State) Fold() (st dedup.FoldStats, did bool, err error) {
	s.folds.run.Lock()
	defer s.folds.run.Unlock()
	st, did, err = s.fold()
	if errors.Is(err, errFoldStopped) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("frontier: fold: %w", err)
	}
	return st, did, nil
}

func (s *State) fold() (dedup.FoldStats, bool, error) {
	var st dedup.FoldStats
	fd, tx, err := s.beginFold()
	if fd == nil || err != nil {
		return st, false, err
	}
	// Feed without the lock: Apply and Lease go on. The read transaction
	// sees every key admitted before BeginFold; a key moved meanwhile
	// (queued to leased to done) is still where the snapshot had it.
	err = store.ForEachHeldHash(tx, func(hs []uint64) error {
		if s.folds.stopped.Load() {
			return errFoldStopped
		}
		if s.knobs.foldFeed != nil {
			s.knobs.foldFeed()
		}
		return fd.Add(hs)
	})
	if rerr := tx.Rollback(); err == nil {
		err = rerr
	}
	if err == nil {
		st, err = s.storeFold(fd)
	}
	s.mu.Lock()
	s.folds.active, s.folds.late = false, nil
	s.mu.Unlock()
	if err != nil {
		_ = fd.Close()
		return st, false, err
	}
	return st, true, nil
}

// beginFold is the fold's first step; nil when there is nothing to fold.
func (s *State) beginFold() (*dedup.Fold, *bolt.Tx, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return nil, nil, err
	}
	ch, ok := s.filter.(*dedup.Chain)
	if !ok || s.readOnly || s.folds.stopped.Load() || !ch.FoldAdvised() {
		return nil, nil, nil
	}
	if err := s.commitLocked(); err != nil {
		return nil, nil, err
	}
	fd, err := ch.BeginFold()
	switch {
	case errors.Is(err, dedup.ErrNothingToFold):
		return nil, nil, nil
	case errors.Is(err, dedup.ErrTooLarge):
		if !s.folds.tooLargeLogged.Swap(true) {
			s.log.Warn("frontier: the scalable filter is not folded: the folded filter beside the chain would pass frontier.filter.max_memory",
				"max_memory", s.chain.MaxBytes, "error", err)
		}
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	}
	tx, err := s.db.Begin(false)
	if err != nil {
		_ = fd.Close()
		return nil, nil, err
	}
	s.folds.active, s.folds.late = true, nil
	return fd, tx, nil
}

// storeFold writes the folded filter's chunks in parts, letting go of the
// state between them, and commits the fold.
func (s *State) storeFold(fd *dedup.Fold) (dedup.FoldStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return fd.Stats(), err
	}
	var held time.Duration // the last part's
	var partTx int         // the last part's transaction ID
	busy := true           // the state was used while the last gap let go of it
	part := func(fn func(tx *bolt.Tx) error) error {
		if s.folds.stopped.Load() {
			return errFoldStopped
		}
		start := time.Now()
		err := s.db.Update(func(tx *bolt.Tx) error {
			partTx = tx.ID()
			return fn(tx)
		})
		held = time.Since(start)
		return err
	}
	// bbolt has one writer: commit what Lease left open before a part.
	if err := s.commitLocked(); err != nil {
		return fd.Stats(), err
	}
	var st dedup.FoldStats
	for {
		// The skips recorded since the last part, then a part: the
		// chunks they dirtied go with it.
		if len(s.folds.late) > 0 {
			if err := fd.Add(s.folds.late); err != nil {
				return fd.Stats(), err
			}
			s.folds.late = s.folds.late[:0]
		}
		var more bool
		err := part(func(tx *bolt.Tx) (err error) {
			more, err = fd.WriteChunks(tx, int64(s.cfg.Frontier.CheckpointPart))
			return err
		})
		if err != nil {
			return fd.Stats(), err
		}
		if !more && !s.folds.inRound {
			// Every chunk stored, and the lock held since: no skip is
			// recorded before the commit.
			err = part(func(tx *bolt.Tx) (err error) {
				st, err = fd.Commit(tx)
				return err
			})
			if err != nil {
				return fd.Stats(), err
			}
			break
		}
		if s.folds.inRound {
			// A fold commits outside a checkpoint round.
			err = s.pauseLocked(func() { time.Sleep(time.Millisecond) })
			if err == nil {
				err = s.commitLocked()
			}
		} else {
			busy, err = s.yieldLocked(held, busy, partTx)
		}
		if err != nil {
			return fd.Stats(), err
		}
	}
	return st, nil
}
