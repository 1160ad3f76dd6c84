package dedup

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"iter"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// Load rebuilds the filter stored in tx: it checks the meta record against
// want (from Plan or PlanLayout), reads the stored chunks, recounts the set
// bits and replays the journal. It returns ErrNotFound when nothing is
// stored, ErrMismatch naming the field when the stored filter is not the one
// wanted, and ErrCorrupt for truncated, missing or garbled data; it never
// starts over silently. tx may be read-only.
func Load(tx *bolt.Tx, want Sizing) (*Filter, error) {
	if err := refuseMixed(tx, ModeFixed); err != nil {
		return nil, err
	}
	src := stored{
		chunks:  bucketRecords(tx.Bucket([]byte(BucketChunks))),
		journal: bucketRecords(tx.Bucket([]byte(BucketJournal))),
	}
	if b := tx.Bucket([]byte(BucketMeta)); b != nil {
		src.meta, src.cut = b.Get([]byte(MetaKey)), b.Get([]byte(CutKey))
	}
	return loadStored(src, want)
}

// stored is a filter's records as read from bbolt, apart from bbolt so the
// loader can be fuzzed on its own.
type stored struct {
	meta    []byte // nil when absent
	cut     []byte // the cut record, nil when absent
	chunks  iter.Seq2[[]byte, []byte]
	journal iter.Seq2[[]byte, []byte]
}

// bucketRecords yields a bucket's records in key order; a nil bucket has none.
func bucketRecords(b *bolt.Bucket) iter.Seq2[[]byte, []byte] {
	return func(yield func(k, v []byte) bool) {
		if b == nil {
			return
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if !yield(k, v) {
				return
			}
		}
	}
}

func empty(s iter.Seq2[[]byte, []byte]) bool {
	for range s {
		return false
	}
	return true
}

func loadStored(src stored, want Sizing) (*Filter, error) {
	if src.meta == nil {
		if !empty(src.journal) {
			return nil, fmt.Errorf("%w: journal present without a meta record", ErrCorrupt)
		}
		if !empty(src.chunks) {
			return nil, fmt.Errorf("%w: chunks present without a meta record", ErrCorrupt)
		}
		return nil, ErrNotFound
	}
	m, err := decodeMeta(src.meta)
	if err != nil {
		return nil, err
	}
	if err := m.matches(want); err != nil {
		return nil, err
	}
	f, err := newFilter(want, int(m.chunkBytes))
	if err != nil {
		return nil, err
	}
	if err := f.load(src, m); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// mismatch is the error for a stored field that is not the one wanted.
func mismatch(field string, got, want any) error {
	return fmt.Errorf("%w: %s is %v, want %v", ErrMismatch, field, got, want)
}

// matches compares a stored filter with the one the caller wants.
func (m *meta) matches(want Sizing) error {
	switch {
	case m.hashVersion != HashVersion:
		return mismatch("hash version", m.hashVersion, HashVersion)
	case m.layout != want.Layout:
		return mismatch("layout", m.layout, want.Layout)
	case m.capacity != want.Capacity:
		return mismatch("capacity", m.capacity, want.Capacity)
	case m.bits != want.Bits:
		return mismatch("bits", m.bits, want.Bits)
	case m.k != want.K:
		return mismatch("k", m.k, want.K)
	}
	return nil
}

// load restores f's bit array from the stored chunks m names, then
// replays the journal.
func (f *Filter) load(src stored, m *meta) error {
	present := make([]uint64, len(f.ckpt.persisted))
	for i, b := range m.stored {
		present[i/8] |= uint64(b) << (8 * (i % 8))
	}
	recs, err := f.checkChunks(src.chunks, present)
	if err != nil {
		return err
	}
	set, err := f.restoreChunks(recs)
	if err != nil {
		return err
	}
	if f.sz.Bits%64 != 0 && len(f.words) > 0 {
		if f.words[len(f.words)-1]>>(f.sz.Bits%64) != 0 {
			return fmt.Errorf("%w: bits set past the end of the array", ErrCorrupt)
		}
	}
	f.setBits.Store(set)
	f.items.Store(m.items)
	f.ckpt.persisted = present
	cut, err := decodeCut(src.cut, src.meta)
	if err != nil {
		return err
	}
	return f.replay(src.journal, cut)
}

// chunkRecord is one stored chunk, its words and checksum not yet checked.
type chunkRecord struct {
	c    int
	data []byte
	sum  uint32
}

// checkChunks checks the chunk records' keys and sizes in order, and that
// they are exactly the chunks the present bitmap names.
func (f *Filter) checkChunks(chunks iter.Seq2[[]byte, []byte], present []uint64) ([]chunkRecord, error) {
	found := make([]uint64, len(present))
	var recs []chunkRecord
	for k, v := range chunks {
		if len(k) != 8 {
			return nil, fmt.Errorf("%w: chunk key of %d bytes", ErrCorrupt, len(k))
		}
		c := binary.BigEndian.Uint64(k)
		if c >= uint64(f.nchunks) || present[c>>6]&(1<<(c&63)) == 0 {
			return nil, fmt.Errorf("%w: chunk %d is not in the meta record", ErrCorrupt, c)
		}
		lo, hi := f.chunkRange(int(c))
		if uint64(len(v)) != (hi-lo)*8+4 {
			return nil, fmt.Errorf("%w: chunk %d is %d bytes, want %d", ErrCorrupt, c, len(v), (hi-lo)*8+4)
		}
		recs = append(recs, chunkRecord{int(c), v[:len(v)-4], binary.LittleEndian.Uint32(v[len(v)-4:])})
		found[c>>6] |= 1 << (c & 63)
	}
	for i := range present {
		if miss := present[i] &^ found[i]; miss != 0 {
			return nil, fmt.Errorf("%w: chunk %d is missing", ErrCorrupt, i*64+bits.TrailingZeros64(miss))
		}
	}
	return recs, nil
}

// restoreChunks checks, copies and counts the chunks into f.words on every
// core (on one, a full 1e9 filter spent seconds here), and returns how many
// bits are set.
func (f *Filter) restoreChunks(recs []chunkRecord) (uint64, error) {
	var (
		set     atomic.Uint64
		next    atomic.Int64
		errOnce sync.Once
		loadErr error
		wg      sync.WaitGroup
	)
	for range min(runtime.GOMAXPROCS(0), max(len(recs), 1)) {
		wg.Go(func() {
			var n uint64
			for i := int(next.Add(1) - 1); i < len(recs); i = int(next.Add(1) - 1) {
				m, err := f.restoreChunk(recs[i])
				if err != nil {
					errOnce.Do(func() { loadErr = err })
					return
				}
				n += m
			}
			set.Add(n)
		})
	}
	wg.Wait()
	return set.Load(), loadErr
}

// restoreChunk checks r's checksum, copies its words into f.words and
// returns how many bits they set.
func (f *Filter) restoreChunk(r chunkRecord) (uint64, error) {
	if got := crc32.Checksum(r.data, castagnoli); got != r.sum {
		return 0, fmt.Errorf("%w: chunk %d checksum %08x, want %08x", ErrCorrupt, r.c, got, r.sum)
	}
	lo, hi := f.chunkRange(r.c)
	w := f.words[lo:hi]
	if nativeLittleEndian {
		// The stored words are already in memory order: one copy.
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8), r.data)
	} else {
		for j := range w {
			w[j] = binary.LittleEndian.Uint64(r.data[8*j:])
		}
	}
	var n uint64
	for _, x := range w {
		n += uint64(bits.OnesCount64(x))
	}
	return n, nil
}

// replay re-adds the journaled hashes; the chunks they touch become dirty,
// so the next checkpoint stores them before it drops the journal. With a
// cut, the item count is the meta's plus every key journaled after the
// cut (each was new when added, though a chunk written since may hold it
// now); without one, the meta's plus the keys the replay finds new.
func (f *Filter) replay(journal iter.Seq2[[]byte, []byte], cut journalCut) error {
	base := f.items.Load()
	var after uint64
	err := replayJournal(journal, func(seq uint64, hs []uint64, seen []bool) {
		f.TestAndAddHashes(hs, seen)
		if seq > cut.seq {
			after += uint64(len(hs))
		}
	})
	if cut.ok {
		f.items.Store(base + after)
	}
	return err
}
