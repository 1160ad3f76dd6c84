package frontier

import (
	"fmt"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
)

// Checkpointing: the inbox compacted (compact.go) and the filter's
// dirty chunks written, in parts, with the state released between them.

// Checkpoint compacts the inbox (Compact), then writes the filter's dirty
// chunks in transactions of frontier.checkpoint_part, the last of which
// writes the counters and truncates the journal up to the keys journaled
// when it began. Between the transactions it lets go of the state: Apply
// and Lease go on, and what they admit stays in the journal for the next
// checkpoint (see checkpointLocked).
func (s *State) Checkpoint() (dedup.CheckpointStats, error) {
	// Compact chunk by chunk, letting Apply and Lease in between; what
	// arrives meanwhile is compacted under the lock below.
	if _, err := s.Compact(); err != nil {
		return dedup.CheckpointStats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return dedup.CheckpointStats{}, err
	}
	st, err := s.checkpointLocked(true)
	if err != nil {
		return st, fmt.Errorf("frontier: checkpoint: %w", err)
	}
	return st, nil
}

// committedTx is the ID of the last committed write transaction.
func (s *State) committedTx() (id int) {
	_ = s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
	return id
}

// checkpointLocked checkpoints the filter. With yield, it lets go of the
// state between its parts, so that Apply, Lease and the rest wait for one
// part at most instead of the whole checkpoint (4.2 s for a fully dirty
// 1e9 filter); Close, which must finish, does not yield.
func (s *State) checkpointLocked(yield bool) (dedup.CheckpointStats, error) {
	var st dedup.CheckpointStats
	start := time.Now()
	if _, err := s.compactLocked(); err != nil {
		return st, err
	}
	// Commit what is open (compactLocked did, unless the inbox was
	// empty): the checkpoint gets a transaction of its own, whose failure
	// loses nothing.
	if err := s.commitLocked(); err != nil {
		return st, err
	}
	// A round (dedup's BeginCheckpoint): the parts write the chunks
	// changed until now, and the last truncates the journal up to the
	// keys journaled until now. The keys Apply journals between the parts
	// stay in the journal, and their chunks stay marked for the next
	// checkpoint: without the round, a checkpoint that let Apply run
	// between its parts would chase the chunks Apply dirties and end only
	// when the ingest paused.
	if err := s.db.View(s.filter.BeginCheckpoint); err != nil {
		return st, err
	}
	s.folds.inRound = true // a fold commits after the round (fold.go)
	defer func() { s.folds.inRound = false }()
	journaled, began := s.journaled, s.now()
	// The changed chunks go in transactions of frontier.checkpoint_part,
	// the last of which truncates the journal: one transaction held every
	// changed chunk twice in memory (a copy for bbolt, and bbolt's pages),
	// 3.2-3.7 GiB owned beside a fully dirty 1e9 filter. A part in flight
	// is live heap twice over, and the garbage parts leave is collected
	// at twice the live heap: at 1M hosts (a 372 MiB live heap) 64 MiB
	// parts peaked at 1,070 MiB owned, 16 MiB parts (the default) at 936-961.
	var held time.Duration // the last part's
	var partTx int         // the last part's transaction ID
	busy := true           // the state was used while the last gap let go of it
	for more, first := true, true; more; first = false {
		if yield && !first {
			var err error
			if busy, err = s.yieldLocked(held, busy, partTx); err != nil {
				return st, err
			}
		}
		partStart := time.Now()
		err := s.db.Update(func(tx *bolt.Tx) error {
			partTx = tx.ID()
			var part dedup.CheckpointStats
			var err error
			if more, part, err = s.filter.CheckpointChunks(tx, int64(s.cfg.Frontier.CheckpointPart)); err != nil {
				return fmt.Errorf("checkpoint filter: %w", err)
			}
			st.Chunks, st.Bytes, st.Duration = st.Chunks+part.Chunks, st.Bytes+part.Bytes, st.Duration+part.Duration
			if more {
				return nil
			}
			return s.putMetaLocked(tx, nil) // the part that truncates the journal
		})
		if err != nil {
			// A failed part loses nothing: the journal still holds the
			// keys and its chunks stay dirty.
			return st, err
		}
		held = time.Since(partStart)
	}
	s.lastCP = CheckpointStatus{
		Count: s.lastCP.Count + 1, Last: s.now(), Seconds: time.Since(start).Seconds(),
		Bytes: st.Bytes, Chunks: st.Chunks,
	}
	// What Apply journaled while the parts ran stays in the journal; its
	// oldest key is younger than the round.
	s.journaled -= journaled
	s.cpBase = began
	return st, nil
}

// pauseLocked is the one place a method that holds mu lets go of it in
// the middle of its work: Compact between its transactions, a checkpoint
// between its parts (yieldLocked). It unlocks, runs wait (nil: none)
// without the lock, locks again and reports whether the state is still
// usable (checkLocked). Its caller must assume every guarded field
// changed meanwhile.
func (s *State) pauseLocked(wait func()) error {
	s.mu.Unlock()
	if wait != nil {
		wait()
	}
	s.mu.Lock()
	return s.checkLocked()
}

// yieldLocked lets the others have the state between two checkpoint
// parts (pauseLocked): for as long as the last part held it (held) when
// they used it in the last gap (busy), else only long enough to yield
// the processor; then it commits what they left open (bbolt has one
// writer, and a part is a write transaction of its own). The checkpoint
// so takes at most half of the state's time, and has no hurry: the
// journal holds the keys meanwhile. It reports whether the others used
// the state in this gap: a transaction left open, or one committed after
// lastTx, the last part's.
func (s *State) yieldLocked(held time.Duration, busy bool, lastTx int) (bool, error) {
	err := s.pauseLocked(func() {
		if s.knobs.checkpointYield != nil {
			s.knobs.checkpointYield()
		}
		if busy {
			time.Sleep(held)
		} else {
			runtime.Gosched()
		}
	})
	if err != nil {
		return busy, err
	}
	busy = s.tx != nil || s.committedTx() != lastTx
	return busy, s.commitLocked()
}

// Adaptive checkpoints. The journal makes every admitted key durable, so a
// filter checkpoint only bounds the journal (its size and the replay on
// open); it costs a rewrite of every dirty chunk, and keys hash to random
// positions: a few tens of thousands of new keys dirty nearly every chunk
// of a 1.12 GiB filter. A checkpoint is therefore due only once the
// journal, at 8 bytes a key, holds at least 1/checkpointJournalRatio of the
// bytes it would rewrite (about 2.2 million keys, a 17 MiB journal that
// replays in about a second, for a fully dirty 1e9 filter), or once the
// oldest journaled key is checkpointAgeFactor checkpoint intervals old.
const (
	checkpointJournalRatio = 64
	checkpointAgeFactor    = 10
)

// CheckpointIfDue compacts the inbox, then checkpoints the filter as
// Checkpoint does when the rule above says it is worth it; did reports
// whether it did. Last, it starts a fold of a scalable filter in the
// background when the chain advises one (State.Fold). Checkpoint always checkpoints; Close checkpoints by the
// same rule, without letting go of the state.
func (s *State) CheckpointIfDue() (cs dedup.CheckpointStats, did bool, err error) {
	// Then, with the state free, a scalable filter that advises a fold
	// folds in the background (fold.go; frontier.filter.fold).
	defer s.startFold()
	s.logGrowthStop()
	if _, err := s.Compact(); err != nil {
		return cs, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(); err != nil {
		return cs, false, err
	}
	if !s.checkpointDueLocked() {
		return cs, false, nil
	}
	if cs, err = s.checkpointLocked(true); err != nil {
		return cs, false, fmt.Errorf("frontier: checkpoint: %w", err)
	}
	return cs, true, nil
}

func (s *State) checkpointDueLocked() bool {
	if s.journaled == 0 {
		return false
	}
	fs := s.filter.Stats()
	dirty := min(int64(fs.DirtyChunks)*int64(s.filter.ChunkBytes()), int64(fs.Bits/8))
	if s.journaled*8*checkpointJournalRatio >= dirty {
		return true
	}
	return s.now().Sub(s.cpBase) >= checkpointAgeFactor*s.cfg.Frontier.CheckpointInterval
}
