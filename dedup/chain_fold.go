package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The fold. A chain's lookups cost a probe in every sub-filter, and its
// sub-filters' rates tighten as it grows; like an LSM tree merging its runs,
// a fold replaces every sub-filter but the newest with one filter, sized
// for the keys they hold, built from the key hashes the caller keeps. A
// chain sized by budget (ChainConfig.Fold) plans it at p/2, the share the
// budget keeps for it; one sized by growth index at the rate the
// sub-filters shared (p·(1−r^j) for growth indices 0 .. j−1). Either way
// the compound bound p still holds. Nothing in a Bloom filter lists its
// keys, so the caller feeds them: the frontier holds the hash of every key
// it admitted (its done records, and its queued and leased URLs), which is
// what `filter rebuild` reads too.
//
// A fold runs beside the ingest: BeginFold allocates the new filter, Add
// fills it (keeping only the hashes the folded sub-filters hold, so a
// caller may feed every key it has), WriteChunks stores it in parts in
// bucket bloom_fold under a new generation, each part a transaction of the
// caller's, and Commit, in one more transaction, writes the chain meta
// record naming the folded filter (format version 3, or 4 by budget) and
// deletes what it replaced. A crash before that commit leaves the chain as
// it was (the loader ignores a generation the meta record does not name);
// after it, the folded chain. The sub-filters it replaced are closed once
// no lookup that may still use them is running.

// BucketFold holds the chunks of folded filters: key u64 BE generation ‖
// u64 BE chunk index -> chunk record. Only the generation the chain meta
// record names is part of the chain; others are a fold cut short.
const BucketFold = "bloom_fold"

// FormatVersionFolded is the chain meta record's version once a fold
// committed: format version 2 with a fold header after the chain header
// (chain_meta.go).
const FormatVersionFolded = 3

// ErrNothingToFold is BeginFold's answer when FoldAdvised is false (no
// sub-filter but the newest and the folded filter), or a fold is under way.
var ErrNothingToFold = errors.New("dedup: nothing to fold")

// foldFP is the rate of a filter folded from growth indices 0 .. n−1: the
// sum of their rates, p0·(1−r^n)/(1−r) = p·(1−r^n).
func (c ChainConfig) foldFP(n int) float64 {
	return c.FP * (1 - math.Pow(c.Tightening, float64(n)))
}

// foldSizing plans a folded filter covering growth indices 0 .. n−1 for
// capacity keys.
func (c ChainConfig) foldSizing(n int, capacity uint64) (Sizing, error) {
	return PlanLayout(capacity, c.foldFP(n), c.Layout)
}

// Fold is a fold under way (see BeginFold). Its methods are for one
// goroutine; the chain's other methods may run meanwhile.
type Fold struct {
	c    *Chain
	olds []*Filter // the sub-filters it replaces, oldest first
	f    *Filter   // the folded filter
	gen  uint64
	// staged: WriteChunks has cleared the generation's leftovers.
	staged    atomic.Bool
	committed atomic.Bool
	closed    bool
	st        FoldStats
	start     time.Time
}

// FoldStats says what a fold read and built.
type FoldStats struct {
	Folded  int    // sub-filters replaced
	Fed     uint64 // hashes Add took
	Kept    uint64 // of them, held by the folded sub-filters: the keys of the folded filter
	Items   uint64 // of the kept, added as new (repeats and false positives aside)
	Sizing  Sizing // the folded filter
	OldBits uint64 // bits of the sub-filters replaced
	// OldItems is the keys the replaced sub-filters counted: a Kept much
	// below it means the caller did not feed every key.
	OldItems uint64
	Chunks   int           // chunks WriteChunks stored
	Bytes    int64         // their bytes
	Duration time.Duration // from BeginFold to Commit
}

// FoldAdvised reports whether a fold would pay. A chain kept folded
// (ChainConfig.Fold, the budget rule) advises one whenever a sub-filter
// other than the newest is not the folded filter, so that a lookup tests
// two filters (three while a fold lags behind growth); a chain sized by
// growth index, from three sub-filters on (the newest and two older ones
// to fold into one).
func (c *Chain) FoldAdvised() bool { return foldable(c.cfg, *c.subs.Load()) }

// foldable reports whether subs hold something to fold under cfg's rule.
func foldable(cfg ChainConfig, subs []*Filter) bool {
	if cfg.Fold {
		return len(subs) >= 3 || (len(subs) == 2 && !subs[0].folded)
	}
	return len(subs) >= 3
}

// BeginFold starts a fold of every sub-filter but the newest: it waits for
// the adds running (one may still add to the sub-filter before the newest),
// allocates
// the folded filter, sized for the keys they count (and 1 + its rate more,
// for the newer keys that test seen in them) at p/2 (sized by budget) or
// the rate they share (by growth index). The caller then feeds, through
// Add, the hash of every key it admitted before BeginFold returned (keys
// admitted later go to the newest sub-filter, which the fold keeps, and
// may be fed or not), stores it with WriteChunks and swaps it in with
// Commit, or gives up with Close. ErrNothingToFold when FoldAdvised is
// false or a fold is under way; ErrTooLarge when MaxBytes leaves no room
// for the folded filter next to the chain.
func (c *Chain) BeginFold() (*Fold, error) {
	c.fold.Lock()
	defer c.fold.Unlock()
	if c.fold.active != nil {
		return nil, fmt.Errorf("%w: a fold is under way", ErrNothingToFold)
	}
	subs := *c.subs.Load()
	if !foldable(c.cfg, subs) {
		return nil, fmt.Errorf("%w: %d sub-filters", ErrNothingToFold, len(subs))
	}
	olds := subs[: len(subs)-1 : len(subs)-1]
	var want float64
	var total, oldBits, oldItems uint64
	for _, f := range subs {
		total += f.sz.Bytes
	}
	for _, f := range olds {
		want += float64(max(f.sz.Capacity, f.items.Load()))
		oldBits += f.sz.Bits
		oldItems += f.items.Load()
	}
	n := olds[len(olds)-1].gi + 1
	// An add that loaded the sub-filters before the newest was added may
	// still be adding to the one before it: once the lookups running now
	// are over, every key of olds was added by a call that has returned.
	c.readers.wait()
	fp := c.cfg.foldFP(n)
	if c.cfg.Fold {
		fp = c.cfg.foldedFP()
	}
	want *= 1 + fp
	sz, err := PlanLayout(uint64(math.Ceil(want)), fp, c.cfg.Layout)
	if err != nil {
		return nil, err
	}
	if c.cfg.MaxBytes > 0 && total+sz.Bytes > c.cfg.MaxBytes {
		return nil, fmt.Errorf("%w: a fold needs %d bytes beside the chain's %d, past the %d-byte cap", ErrTooLarge, sz.Bytes, total, c.cfg.MaxBytes)
	}
	f, err := newFilter(sz, c.cfg.ChunkBytes)
	if err != nil {
		return nil, err
	}
	f.gi, f.folded = n-1, true
	c.ckpt.Lock()
	gen := c.foldGen + 1
	c.ckpt.Unlock()
	fd := &Fold{c: c, olds: olds, f: f, gen: gen, start: time.Now()}
	fd.st = FoldStats{Folded: len(olds), Sizing: sz, OldBits: oldBits, OldItems: oldItems}
	c.fold.active = fd
	return fd, nil
}

// Add feeds key hashes: the ones the sub-filters being folded hold go into
// the folded filter, the others (keys of newer sub-filters, or none) are
// dropped. Feeding a hash twice, or hashes the chain never saw, is
// harmless.
func (fd *Fold) Add(hs []uint64) error {
	if fd.committed.Load() || fd.closed {
		return fmt.Errorf("%w: fold is over", ErrInvalid)
	}
	var seen [chainGroup]bool
	var kept [chainGroup]uint64
	var fseen [chainGroup]bool
	for start := 0; start < len(hs); start += chainGroup {
		g := hs[start:min(start+chainGroup, len(hs))]
		testChain(fd.olds, g, seen[:len(g)])
		n := 0
		for i, h := range g {
			if seen[i] {
				kept[n] = h
				n++
			}
		}
		fd.f.TestAndAddHashes(kept[:n], fseen[:n])
		fd.st.Fed += uint64(len(g))
		fd.st.Kept += uint64(n)
	}
	return nil
}

// foldChunkKey is the key of chunk c of the folded filter of generation gen.
func foldChunkKey(gen uint64) func(c int) []byte {
	return func(c int) []byte {
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, gen), uint64(c))
	}
}

// WriteChunks stores up to maxBytes (at least one chunk; 0: all) of the
// folded filter's chunks in bucket bloom_fold, in tx, and reports whether
// chunks remain. Its first call also deletes what a fold cut short left
// there. A part whose transaction rolls back is written again by the next
// call. The chain's meta record is untouched: until Commit, a crash leaves
// the chain as it was.
func (fd *Fold) WriteChunks(tx *bolt.Tx, maxBytes int64) (more bool, err error) {
	if fd.committed.Load() || fd.closed {
		return false, fmt.Errorf("%w: fold is over", ErrInvalid)
	}
	if err := refuseMixed(tx, ModeScalable); err != nil {
		return false, err
	}
	b, err := tx.CreateBucketIfNotExists([]byte(BucketFold))
	if err != nil {
		return false, fmt.Errorf("dedup: fold: %w", err)
	}
	if !fd.staged.Load() {
		if err := deleteFoldGens(b, fd.c.storedGen(tx)); err != nil {
			return false, err
		}
		tx.OnCommit(func() { fd.staged.Store(true) })
	}
	var budget *chunkBudget
	if maxBytes > 0 {
		budget = &chunkBudget{left: maxBytes}
	}
	f := fd.f
	f.ckpt.Lock()
	defer f.ckpt.Unlock()
	var st CheckpointStats
	w, err := f.writeChunksLocked(b, foldChunkKey(fd.gen), &st, budget, false)
	if err != nil {
		return false, err
	}
	w.commitOnLocked(f, tx)
	fd.st.Chunks += st.Chunks
	fd.st.Bytes += st.Bytes
	return f.anyDirty(), nil
}

// deleteFoldGens deletes every folded filter's chunks but generation keep's.
func deleteFoldGens(b *bolt.Bucket, keep uint64) error {
	var keys [][]byte
	cur := b.Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		if len(k) != 16 || binary.BigEndian.Uint64(k) != keep || keep == 0 {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return fmt.Errorf("dedup: fold: delete %x: %w", k, err)
		}
	}
	return nil
}

// storedGen is the fold generation of the chain meta record in tx (0:
// none, or not a folded chain).
func (c *Chain) storedGen(tx *bolt.Tx) uint64 {
	mb := tx.Bucket([]byte(BucketMeta))
	if mb == nil {
		return 0
	}
	m, err := decodeChainMeta(mb.Get([]byte(MetaKeyChain)))
	if err != nil {
		return 0
	}
	return m.gen
}

// Commit swaps the folded filter in, in tx: it writes the chain meta
// record with the folded filter in place of the sub-filters it replaces
// (the records of the others as the last checkpoint stored them, with the
// cut record kept), and deletes their chunks and any other generation's.
// Every chunk must be stored (WriteChunks reported no more, and its
// transactions committed). The chain switches to the folded filter when tx
// commits (or, should the commit's handlers lag, at the next checkpoint
// that sees the record), and closes the sub-filters replaced once no
// lookup may still use them. Commit should have its own transaction; if it
// rolls back, nothing changed and Commit may be called again.
func (fd *Fold) Commit(tx *bolt.Tx) (FoldStats, error) {
	if fd.committed.Load() || fd.closed {
		return fd.st, fmt.Errorf("%w: fold is over", ErrInvalid)
	}
	f := fd.f
	f.ckpt.Lock()
	unstored := !fd.staged.Load() || f.anyDirty() || (f.ckpt.pending != nil && !f.ckpt.pending.committed)
	persisted := append([]uint64(nil), f.ckpt.persisted...)
	f.ckpt.Unlock()
	if unstored {
		return fd.st, fmt.Errorf("%w: fold: chunks not stored yet (WriteChunks)", ErrInvalid)
	}
	if err := refuseMixed(tx, ModeScalable); err != nil {
		return fd.st, err
	}
	c := fd.c
	c.ckpt.Lock()
	defer c.ckpt.Unlock()
	if err := c.settleLocked(tx); err != nil {
		return fd.st, err
	}
	mb := tx.Bucket([]byte(BucketMeta))
	var rec []byte
	if mb != nil {
		rec = mb.Get([]byte(MetaKeyChain))
	}
	if rec == nil {
		return fd.st, fmt.Errorf("%w: fold: no chain stored yet", ErrNotFound)
	}
	old, err := decodeChainMeta(rec)
	if err != nil {
		return fd.st, err
	}
	if old.gen != c.foldGen {
		return fd.st, fmt.Errorf("%w: fold: stored fold generation %d, the chain's is %d", ErrCorrupt, old.gen, c.foldGen)
	}
	cut, err := decodeCut(mb.Get([]byte(CutKey)), rec)
	if err != nil {
		return fd.st, err
	}
	n := f.gi + 1 // growth indices folded
	nm := *old
	nm.folded, nm.gen = n, fd.gen
	base := f.metaLocked(persisted)
	if cut.ok {
		// The loader counts every key journaled after the cut once more
		// (the replay's part); the folded filter counted the ones it
		// holds already.
		after, err := journaledAfter(tx, cut.seq, f)
		if err != nil {
			return fd.st, err
		}
		base.items -= min(after, base.items)
	}
	nm.subs = []meta{*base}
	for i, s := range old.subs {
		if old.growthIndex(i) >= n {
			nm.subs = append(nm.subs, s)
		}
	}
	if err := putChainMeta(tx, &nm); err != nil {
		return fd.st, err
	}
	if cut.ok {
		if err := putCutSeq(tx, MetaKeyChain, cut.seq); err != nil {
			return fd.st, err
		}
	}
	if err := deleteChainChunksBelow(tx, n); err != nil {
		return fd.st, err
	}
	if b := tx.Bucket([]byte(BucketFold)); b != nil {
		if err := deleteFoldGens(b, fd.gen); err != nil {
			return fd.st, err
		}
	}
	c.pending = fd
	tx.OnCommit(func() {
		c.ckpt.Lock()
		defer c.ckpt.Unlock()
		if c.pending == fd {
			c.applyFoldLocked()
		}
	})
	fd.st.Items = f.items.Load()
	fd.st.Duration = time.Since(fd.start)
	return fd.st, nil
}

// settleLocked applies a fold whose commit tx shows (its handlers have not
// run yet) or forgets one whose transaction rolled back. c.ckpt must be
// held; every writer of the chain meta record calls it first.
func (c *Chain) settleLocked(tx *bolt.Tx) error {
	fd := c.pending
	if fd == nil {
		return nil
	}
	if c.storedGen(tx) == fd.gen {
		c.applyFoldLocked()
		return nil
	}
	c.pending = nil
	return nil
}

// applyFoldLocked swaps the pending fold's filter in for the sub-filters it
// replaces and, in a goroutine of the chain's, waits for the lookups that
// may still use them and closes them. c.ckpt must be held.
func (c *Chain) applyFoldLocked() {
	fd := c.pending
	c.pending = nil
	c.grow.Lock()
	subs := *c.subs.Load()
	rest := subs[len(fd.olds):]
	folded := make([]*Filter, 0, 1+len(rest))
	folded = append(folded, fd.f)
	folded = append(folded, rest...)
	c.subs.Store(&folded)
	c.grow.Unlock()
	c.foldGen = fd.gen
	fd.committed.Store(true)
	// Unmapping a gigabyte takes a while: a goroutine of the chain's does
	// it, so that the caller's transaction (and whatever lock it holds
	// around it) does not wait.
	c.wg.Go(func() {
		c.readers.wait()
		for _, f := range fd.olds {
			f.Close()
		}
	})
	c.fold.Lock()
	if c.fold.active == fd {
		c.fold.active = nil
	}
	c.fold.Unlock()
}

// swapInMemory switches the chain to fd's filter without storing it: for a
// chain that lives in memory only (the false-positive experiment).
func (c *Chain) swapInMemory(fd *Fold) {
	c.ckpt.Lock()
	defer c.ckpt.Unlock()
	c.pending = fd
	c.applyFoldLocked()
}

// Committed reports whether the chain has switched to the folded filter.
func (fd *Fold) Committed() bool {
	fd.c.ckpt.Lock()
	defer fd.c.ckpt.Unlock()
	return fd.committed.Load()
}

// Stats returns what the fold has read and built so far.
func (fd *Fold) Stats() FoldStats {
	st := fd.st
	st.Items = fd.f.items.Load()
	return st
}

// Close gives the fold up unless it committed: it releases the folded
// filter. What WriteChunks stored stays in bloom_fold until the next fold
// or commit deletes it; the loader ignores it. After Commit, Close is a
// no-op.
func (fd *Fold) Close() error {
	c := fd.c
	c.ckpt.Lock()
	if fd.committed.Load() || c.pending == fd {
		c.ckpt.Unlock()
		return nil
	}
	c.ckpt.Unlock()
	c.fold.Lock()
	defer c.fold.Unlock()
	if c.fold.active == fd {
		c.fold.active = nil
	}
	return fd.release()
}

// release closes the folded filter once. c.fold must be held.
func (fd *Fold) release() error {
	if fd.closed || fd.committed.Load() {
		return nil
	}
	fd.closed = true
	return fd.f.Close()
}

// journaledAfter counts the keys of the journal records after seq that f
// holds.
func journaledAfter(tx *bolt.Tx, seq uint64, f *Filter) (uint64, error) {
	b := tx.Bucket([]byte(BucketJournal))
	if b == nil {
		return 0, nil
	}
	var n uint64
	records := func(yield func(k, v []byte) bool) {
		cur := b.Cursor()
		for k, v := cur.Seek(binary.BigEndian.AppendUint64(nil, seq+1)); k != nil; k, v = cur.Next() {
			if !yield(k, v) {
				return
			}
		}
	}
	err := replayJournal(records, func(_ uint64, hs []uint64, seen []bool) {
		f.TestHashes(hs, seen)
		for _, s := range seen {
			if s {
				n++
			}
		}
	})
	return n, err
}

// deleteChainChunksBelow deletes the chunks of sub-filters of growth index
// below n from bloom_chain.
func deleteChainChunksBelow(tx *bolt.Tx, n int) error {
	b := tx.Bucket([]byte(BucketChainChunks))
	if b == nil {
		return nil
	}
	var keys [][]byte
	cur := b.Cursor()
	for k, _ := cur.First(); k != nil && (len(k) < 4 || binary.BigEndian.Uint32(k) < uint32(n)); k, _ = cur.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return fmt.Errorf("dedup: fold: delete chunk %x: %w", k, err)
		}
	}
	return nil
}

// epochs tracks the lookups running on the chain's sub-filters, so that a
// fold closes the ones it replaced only once none may still use them: a
// lookup enters the current epoch before it loads the sub-filters and
// exits it when done; wait starts a new epoch and waits for the lookups of
// the old one (they may hold the old sub-filters; later ones load the new).
type epochs struct {
	epoch   atomic.Uint64
	running [2]atomic.Int64
	waiting sync.Mutex // one wait at a time
}

func (e *epochs) enter() uint64 {
	for {
		n := e.epoch.Load()
		e.running[n&1].Add(1)
		if e.epoch.Load() == n {
			return n
		}
		e.running[n&1].Add(-1)
	}
}

func (e *epochs) exit(n uint64) { e.running[n&1].Add(-1) }

// wait returns once every lookup that entered before it has exited.
func (e *epochs) wait() {
	e.waiting.Lock()
	defer e.waiting.Unlock()
	n := e.epoch.Add(1) - 1
	for e.running[n&1].Load() != 0 {
		runtime.Gosched()
	}
}
