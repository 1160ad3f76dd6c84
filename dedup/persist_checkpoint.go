package dedup

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// CheckpointStats says what a Checkpoint wrote.
type CheckpointStats struct {
	Chunks   int           // chunks written
	Bytes    int64         // bytes of chunk data written
	Duration time.Duration // time spent in Checkpoint (not the commit)
}

// Checkpoint writes the chunks changed since the last committed checkpoint
// and the meta record into tx, and drops the journal. It only takes effect
// if tx commits: chunks of a checkpoint whose transaction rolled back are
// written again by the next one. Concurrent adds may continue; a key must be
// added before its hash is journaled (see the package Caveats).
func (f *Filter) Checkpoint(tx *bolt.Tx) (CheckpointStats, error) {
	_, st, err := f.checkpoint(tx, nil)
	return st, err
}

// CheckpointChunks is a part of a checkpoint too big for one transaction:
// it writes into tx chunks changed since the last committed checkpoint,
// at most maxBytes of them (but at least one), and the meta record naming
// them; it reports whether changed chunks remain, and drops the journal
// only when none do (the part that completes the checkpoint). In a round
// (BeginCheckpoint) it takes only the chunks the round owes, and the part
// that completes it drops only the journal records up to the round's cut. A
// checkpoint written as CheckpointChunks until none remain holds at most
// maxBytes of chunk copies, and bbolt's pages for them, in memory at a
// time, where one Checkpoint holds every changed chunk twice over (2.2
// GiB for a fully dirty 1e9 filter). A crash between the parts loses
// nothing: the chunks written are the old ones with bits added, and Load
// replays the journal over them. The item count after such a crash is
// exact: the cut record written with each part's meta record says which
// journaled keys the meta counts (see the format), provided each key is
// journaled before the next part (as it is when a transaction adds and
// journals a batch).
func (f *Filter) CheckpointChunks(tx *bolt.Tx, maxBytes int64) (more bool, st CheckpointStats, err error) {
	return f.checkpoint(tx, &chunkBudget{left: maxBytes})
}

// BeginCheckpoint begins a round: a checkpoint written as CheckpointChunks
// parts while adds (and their journal records) go on between the parts,
// in other transactions. The round's parts write the chunks changed until
// now, not those changed after; its last part truncates the journal only
// up to the last record tx shows (a read transaction will do), so the
// keys journaled after BeginCheckpoint stay in the journal, and their
// chunks stay marked changed for the next checkpoint. Without a round,
// parts take every changed chunk and the last drops the whole journal: the
// checkpoint ends only once adds pause. Every key journaled up to now must
// already have been added (the journal is appended after the add). A
// Checkpoint, or CheckpointChunks without a round, ends an unfinished
// round and writes its chunks too; a BeginCheckpoint during one starts
// over with its chunks and the new ones.
func (f *Filter) BeginCheckpoint(tx *bolt.Tx) error {
	if err := refuseMixed(tx, ModeFixed); err != nil {
		return err
	}
	f.ckpt.Lock()
	defer f.ckpt.Unlock()
	f.ckpt.round = round{active: true, cut: journalSeq(tx)}
	f.beginRoundLocked()
	return nil
}

// round is the state of a checkpoint begun by BeginCheckpoint: whether one
// is under way, and the journal's sequence when it began (its last part
// truncates the journal up to it).
type round struct {
	active bool
	cut    uint64
}

// beginRoundLocked moves the chunks marked changed into the round's
// todo list (joining those an unfinished round left). f.ckpt must be held.
func (f *Filter) beginRoundLocked() {
	if f.ckpt.todo == nil {
		f.ckpt.todo = make([]uint64, len(f.dirty))
	}
	for i := range f.dirty {
		f.ckpt.todo[i] |= f.dirty[i].Swap(0)
	}
}

// endRoundLocked drops a round's todo list, marking the chunks it had still
// to write changed again. f.ckpt must be held.
func (f *Filter) endRoundLocked() {
	for i, d := range f.ckpt.todo {
		if d != 0 {
			f.dirty[i].Or(d)
		}
	}
	f.ckpt.todo = nil
}

// todoLeft reports whether the round has chunks left to write. f.ckpt must
// be held.
func (f *Filter) todoLeft() bool {
	for _, d := range f.ckpt.todo {
		if d != 0 {
			return true
		}
	}
	return false
}

// checkpoint is Checkpoint, or with a budget CheckpointChunks.
func (f *Filter) checkpoint(tx *bolt.Tx, budget *chunkBudget) (more bool, st CheckpointStats, err error) {
	start := time.Now()
	if err := refuseMixed(tx, ModeFixed); err != nil {
		return false, st, err
	}
	f.ckpt.Lock()
	defer f.ckpt.Unlock()
	rd := f.ckpt.round
	if budget == nil || !rd.active {
		f.ckpt.round = round{}
		f.endRoundLocked()
		rd = round{}
	}
	bucket, err := tx.CreateBucketIfNotExists([]byte(BucketChunks))
	if err != nil {
		return false, st, fmt.Errorf("dedup: checkpoint: %w", err)
	}
	w, err := f.writeChunksLocked(bucket, chunkKey, &st, budget, rd.active)
	if err != nil {
		return false, CheckpointStats{}, err
	}
	if err := f.putMetaLocked(tx, w.stored); err != nil {
		w.undo(f)
		return false, CheckpointStats{}, err
	}
	if rd.active {
		more = f.todoLeft()
	} else {
		more = budget != nil && f.anyDirty()
	}
	if !more {
		if err := truncateJournal(tx, rd); err != nil {
			w.undo(f)
			return false, CheckpointStats{}, err
		}
		// The round is over; if tx rolls back, the journal is whole and
		// the chunks of this part are marked changed again (pending).
		f.ckpt.round = round{}
		f.endRoundLocked()
	}
	if err := putCut(tx, MetaKey); err != nil {
		w.undo(f)
		return false, CheckpointStats{}, err
	}
	w.commitOnLocked(f, tx)
	st.Duration = time.Since(start)
	return more, st, nil
}

// anyDirty reports whether a chunk is marked changed.
func (f *Filter) anyDirty() bool {
	for i := range f.dirty {
		if f.dirty[i].Load() != 0 {
			return true
		}
	}
	return false
}

// chunkBudget bounds the bytes of chunks a part of a checkpoint writes
// (CheckpointChunks): at most left, and at least one chunk. A nil budget
// takes every chunk.
type chunkBudget struct {
	left  int64
	taken bool
	full  bool // a chunk did not fit
}

// take reports whether a chunk of n bytes fits, and takes its bytes.
func (b *chunkBudget) take(n int64) bool {
	if b == nil {
		return true
	}
	if b.taken && n > b.left {
		b.full = true
		return false
	}
	b.left -= n
	b.taken = true
	return true
}

// spent reports whether a chunk did not fit.
func (b *chunkBudget) spent() bool { return b != nil && b.full }

// checkpointTx is one Checkpoint's chunks, until its transaction commits.
type checkpointTx struct {
	chunks    []int
	committed bool
}

// chunkWrite is what writeChunksLocked wrote: the chunks, and the
// stored-chunk bitmap they make once their transaction commits.
type chunkWrite struct {
	chunks []int
	stored []uint64
}

// writeChunksLocked writes the chunks changed since the last committed
// checkpoint into bucket, under key(c), and adds them to st; with a
// budget, only those it takes, the others staying marked changed. A
// caller whose later step fails calls undo; one that succeeds calls
// commitOnLocked. f.ckpt must be held.
func (f *Filter) writeChunksLocked(bucket *bolt.Bucket, key func(c int) []byte, st *CheckpointStats, budget *chunkBudget, inRound bool) (chunkWrite, error) {
	if p := f.ckpt.pending; p != nil && !p.committed {
		chunkWrite{chunks: p.chunks}.undo(f)
	}
	f.ckpt.pending = nil
	var w chunkWrite
	// A round takes the chunks from its todo list (a sub-filter added
	// during the round has none), else from those marked changed.
	n := len(f.dirty)
	if inRound {
		n = len(f.ckpt.todo)
	}
	for i := 0; i < n && !budget.spent(); i++ {
		var d uint64
		if inRound {
			d, f.ckpt.todo[i] = f.ckpt.todo[i], 0
		} else {
			d = f.dirty[i].Swap(0)
		}
		for d != 0 {
			c := i*64 + bits.TrailingZeros64(d)
			if lo, hi := f.chunkRange(c); !budget.take(int64(hi-lo) * 8) {
				if inRound {
					f.ckpt.todo[i] |= d // for a later part
				} else {
					f.dirty[i].Or(d)
				}
				break
			}
			w.chunks = append(w.chunks, c)
			d &= d - 1
		}
	}
	w.stored = append([]uint64(nil), f.ckpt.persisted...)
	for _, c := range w.chunks {
		lo, hi := f.chunkRange(c)
		// bbolt keeps the value until commit, so each chunk gets its own buffer.
		buf := make([]byte, 0, (hi-lo)*8+4)
		for i := lo; i < hi; i++ {
			buf = binary.LittleEndian.AppendUint64(buf, atomic.LoadUint64(&f.words[i]))
		}
		buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
		if err := bucket.Put(key(c), buf); err != nil {
			w.undo(f)
			return chunkWrite{}, fmt.Errorf("dedup: checkpoint chunk %d: %w", c, err)
		}
		st.Chunks++
		st.Bytes += int64(len(buf) - 4)
		w.stored[c>>6] |= 1 << (c & 63)
	}
	return w, nil
}

// undo marks the chunks of a checkpoint that will not commit dirty again,
// and puts them back on the todo list of a round under way (whose last part
// must not truncate the journal without them).
func (w chunkWrite) undo(f *Filter) {
	for _, c := range w.chunks {
		f.dirty[c>>6].Or(1 << (c & 63))
		if f.ckpt.todo != nil {
			f.ckpt.todo[c>>6] |= 1 << (c & 63)
		}
	}
}

// commitOnLocked records the chunks as persisted when tx commits; if tx
// rolls back, the next checkpoint writes them again. f.ckpt must be held.
func (w chunkWrite) commitOnLocked(f *Filter, tx *bolt.Tx) {
	p := &checkpointTx{chunks: w.chunks}
	f.ckpt.pending = p
	tx.OnCommit(func() {
		f.ckpt.Lock()
		defer f.ckpt.Unlock()
		p.committed = true
		for _, c := range p.chunks {
			f.ckpt.persisted[c>>6] |= 1 << (c & 63)
		}
	})
}
