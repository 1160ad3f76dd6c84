package dedup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"

	bolt "go.etcd.io/bbolt"
)

// StoredMode reports which kind of filter tx holds: ErrNotFound when none,
// ErrCorrupt when parts of both.
func StoredMode(tx *bolt.Tx) (Mode, error) {
	if err := refuseMixed(tx, 0); err != nil {
		return 0, err
	}
	switch {
	case hasMeta(tx, MetaKey):
		return ModeFixed, nil
	case hasMeta(tx, MetaKeyChain):
		return ModeScalable, nil
	}
	return 0, ErrNotFound
}

// refuseMixed returns ErrCorrupt when tx holds parts of a fixed and of a
// scalable filter, and ErrMismatch when it holds the other kind than want
// (0: either).
func refuseMixed(tx *bolt.Tx, want Mode) error {
	fixedMeta, chainMeta := hasMeta(tx, MetaKey), hasMeta(tx, MetaKeyChain)
	fixedChunks := !empty(bucketRecords(tx.Bucket([]byte(BucketChunks))))
	chainChunks := !empty(bucketRecords(tx.Bucket([]byte(BucketChainChunks)))) || !empty(bucketRecords(tx.Bucket([]byte(BucketFold))))
	switch {
	case (fixedMeta || fixedChunks) && (chainMeta || chainChunks):
		return fmt.Errorf("%w: the file mixes a fixed filter (format %d) and a scalable one (format %d)", ErrCorrupt, FormatVersion, FormatVersionChain)
	case want == ModeFixed && chainMeta:
		return fmt.Errorf("%w: the file holds a scalable filter (format %d), not a fixed one", ErrMismatch, FormatVersionChain)
	case want == ModeScalable && fixedMeta:
		return fmt.Errorf("%w: the file holds a fixed filter (format %d), not a scalable one", ErrMismatch, FormatVersion)
	}
	return nil
}

// StoredChain returns the plan of the scalable filter stored in tx (Initial,
// FP, Growth, Tightening, Layout, ChunkBytes, Fold; Capacity and MaxBytes are not
// stored): what a tool that inspects a file passes to LoadChain.
// ErrNotFound when tx holds no chain.
func StoredChain(tx *bolt.Tx) (ChainConfig, error) {
	var b []byte
	if mb := tx.Bucket([]byte(BucketMeta)); mb != nil {
		b = mb.Get([]byte(MetaKeyChain))
	}
	if b == nil {
		return ChainConfig{}, fmt.Errorf("%w: no chain meta record", ErrNotFound)
	}
	m, err := decodeChainMeta(b)
	if err != nil {
		return ChainConfig{}, err
	}
	return ChainConfig{Initial: m.initial, FP: m.fp, Growth: m.growth, Tightening: m.tightening, Layout: m.layout, ChunkBytes: int(m.chunkBytes), Fold: m.budget}, nil
}

// LoadChain rebuilds the scalable filter stored in tx, as Load does a fixed
// one: it checks the chain meta record against want (ErrMismatch naming the
// field), reads every sub-filter's chunks, and replays the journal through
// the chain, adding again the sub-filters grown since the last checkpoint.
// want's Capacity and MaxBytes are taken as given: they may change between
// runs. want's Fold is not: the chain keeps the rule it was created with
// (Config says which). tx may be read-only.
func LoadChain(tx *bolt.Tx, want ChainConfig) (*Chain, error) {
	if err := refuseMixed(tx, ModeScalable); err != nil {
		return nil, err
	}
	src := storedChain{
		chunks:  bucketRecords(tx.Bucket([]byte(BucketChainChunks))),
		fold:    bucketRecords(tx.Bucket([]byte(BucketFold))),
		journal: bucketRecords(tx.Bucket([]byte(BucketJournal))),
	}
	if b := tx.Bucket([]byte(BucketMeta)); b != nil {
		src.meta, src.cut = b.Get([]byte(MetaKeyChain)), b.Get([]byte(CutKey))
	}
	return loadChain(src, want)
}

// storedChain is a chain's records as read from bbolt.
type storedChain struct {
	meta    []byte
	cut     []byte                    // the cut record, nil when absent
	chunks  iter.Seq2[[]byte, []byte] // keys growth index ‖ chunk
	fold    iter.Seq2[[]byte, []byte] // keys generation ‖ chunk; nil: none
	journal iter.Seq2[[]byte, []byte]
}

func loadChain(src storedChain, want ChainConfig) (*Chain, error) {
	want, err := want.withDefaults()
	if err != nil {
		return nil, err
	}
	if src.meta == nil {
		if !empty(src.journal) || !empty(src.chunks) {
			return nil, fmt.Errorf("%w: chain chunks or journal present without a chain meta record", ErrCorrupt)
		}
		return nil, ErrNotFound
	}
	m, err := decodeChainMeta(src.meta)
	if err != nil {
		return nil, err
	}
	if err := m.matches(want); err != nil {
		return nil, err
	}
	cut, err := decodeCut(src.cut, src.meta)
	if err != nil {
		return nil, err
	}
	last := uint32(m.growthIndex(len(m.subs) - 1))
	for k := range src.chunks {
		if len(k) != 12 || binary.BigEndian.Uint32(k) > last {
			return nil, fmt.Errorf("%w: chain chunk key %x is not a chunk of the %d sub-filters", ErrCorrupt, k, len(m.subs))
		}
	}
	var subs []*Filter
	closeAll := func() {
		for _, f := range subs {
			f.Close()
		}
	}
	for i := range m.subs {
		sz, _ := m.sizing(want, i) // matches checked it
		f, err := newFilter(sz, int(m.chunkBytes))
		if err != nil {
			closeAll()
			return nil, err
		}
		f.gi = m.growthIndex(i)
		f.folded = m.folded > 0 && i == 0
		subs = append(subs, f)
		from := src.chunks
		prefix := binary.BigEndian.AppendUint32(nil, uint32(f.gi))
		if f.folded {
			from, prefix = src.fold, binary.BigEndian.AppendUint64(nil, m.gen)
		}
		chunks := func(yield func(k, v []byte) bool) {
			if from == nil {
				return
			}
			for k, v := range from {
				if bytes.HasPrefix(k, prefix) && !yield(k[len(prefix):], v) {
					return
				}
			}
		}
		if err := f.load(stored{chunks: chunks, journal: func(func(k, v []byte) bool) {}}, &m.subs[i]); err != nil {
			closeAll()
			return nil, fmt.Errorf("sub-filter %d: %w", i, err)
		}
	}
	// The chain keeps the rule it was created with (chain_meta.go).
	want.Fold = m.budget
	c := newChainOf(want, subs)
	c.foldGen = m.gen
	c.syncGrowth = true
	err = replayJournal(src.journal, func(seq uint64, hs []uint64, seen []bool) { c.replay(seq, hs, seen, cut) })
	c.syncGrowth = false
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// replay re-adds one journal record through the chain. Without a cut it
// counts the keys it finds new, as before cut records. With one, the keys
// of a record up to the cut are in the sub-filters' counts already: the
// ones found nowhere (their chunks were not all written) go to the newest
// sub-filter uncounted, and the chain does not grow; every key of a later
// record counts once, the ones found (a chunk written since holds them)
// on the newest sub-filter.
func (c *Chain) replay(seq uint64, hs []uint64, seen []bool, cut journalCut) {
	if !cut.ok {
		c.TestAndAddHashes(hs, seen)
		return
	}
	if seq > cut.seq {
		c.TestAndAddHashes(hs, seen)
		found := uint64(0)
		for _, s := range seen {
			if s {
				found++
			}
		}
		subs := *c.subs.Load()
		subs[len(subs)-1].items.Add(found)
		return
	}
	subs := *c.subs.Load()
	newest := subs[len(subs)-1]
	items := newest.items.Load()
	c.addAbsent(hs, seen, newest)
	newest.items.Store(items)
}
