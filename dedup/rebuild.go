package dedup

import (
	"errors"
	"fmt"
	"iter"
	"time"

	bolt "go.etcd.io/bbolt"
)

// RebuildStats says what Rebuild read and built.
type RebuildStats struct {
	Hashes   uint64        // hashes read (one pass)
	Items    uint64        // of them, added as new: the distinct keys, false positives aside
	Sizing   Sizing        // the filter built
	Duration time.Duration // both passes
}

// Rebuild builds one fixed filter for capacity keys at rate fp (layout and
// chunk size from opts) from the 64-bit key hashes a caller holds. Bit
// positions derive only from Hash (HashVersion 1), so the filter is exactly
// the one those keys would have built. It reads hashes twice: once to add
// them, once to check that every one tests seen; a miss (the hashes changed
// between the passes) is ErrCorrupt. More distinct keys than capacity is
// ErrInvalid: the filter would be overfilled from the start.
func Rebuild(hashes iter.Seq[uint64], capacity uint64, fp float64, opts ...Option) (*Filter, RebuildStats, error) {
	start := time.Now()
	f, err := New(capacity, fp, opts...)
	if err != nil {
		return nil, RebuildStats{}, err
	}
	st := RebuildStats{Sizing: f.Sizing()}
	var buf [hashBatch]uint64
	var seen [hashBatch]bool
	n := 0
	flush := func() {
		f.TestAndAddHashes(buf[:n], seen[:n])
		n = 0
	}
	for h := range hashes {
		buf[n] = h
		n++
		st.Hashes++
		if n == hashBatch {
			flush()
		}
	}
	flush()
	st.Items = f.items.Load()
	if st.Items > capacity {
		f.Close()
		return nil, st, fmt.Errorf("%w: %d distinct keys exceed the rebuild capacity %d", ErrInvalid, st.Items, capacity)
	}
	var checked uint64
	for h := range hashes {
		checked++
		if !f.TestHash(h) {
			f.Close()
			return nil, st, fmt.Errorf("%w: rebuild: hash %016x is missing from the rebuilt filter", ErrCorrupt, h)
		}
	}
	if checked != st.Hashes {
		f.Close()
		return nil, st, fmt.Errorf("%w: rebuild: %d hashes on the first pass, %d on the second", ErrCorrupt, st.Hashes, checked)
	}
	st.Duration = time.Since(start)
	return f, st, nil
}

// ReplaceStored replaces the filter tx holds, fixed or scalable (or none),
// with f: it drops both formats' chunks, meta and cut records and the
// journal, then writes every chunk of f and its meta and cut records
// (format 1). Nothing of it takes effect unless tx commits, so a crash
// before the commit leaves the old filter as it was. f's journal starts
// empty.
func ReplaceStored(tx *bolt.Tx, f *Filter) (CheckpointStats, error) {
	for _, b := range []string{BucketChunks, BucketChainChunks, BucketFold, BucketJournal} {
		if err := tx.DeleteBucket([]byte(b)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return CheckpointStats{}, fmt.Errorf("dedup: replace: drop %s: %w", b, err)
		}
	}
	if b := tx.Bucket([]byte(BucketMeta)); b != nil {
		for _, k := range []string{MetaKey, MetaKeyChain, CutKey} {
			if err := b.Delete([]byte(k)); err != nil {
				return CheckpointStats{}, fmt.Errorf("dedup: replace: drop meta %s: %w", k, err)
			}
		}
	}
	// Nothing of f is stored any more: every chunk is written afresh.
	f.ckpt.Lock()
	f.ckpt.pending = nil
	clear(f.ckpt.persisted)
	for c := range f.nchunks {
		f.dirty[c>>6].Or(1 << (c & 63))
	}
	f.ckpt.Unlock()
	return f.Checkpoint(tx)
}
