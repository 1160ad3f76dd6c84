package dedup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"iter"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A scalable filter's state in the caller's bbolt file, format version 2.
// It shares the meta and journal buckets with format 1 but not the meta key
// or the chunk bucket, so a file holds one or the other; a file holding
// parts of both is refused (ErrCorrupt), never reinitialised.
//
//	bloom_meta   key "chain" -> chain meta record
//	bloom_chain  key u32 BE growth index ‖ u64 BE chunk index -> chunk record
//	bloom_fold   key u64 BE fold generation ‖ u64 BE chunk index -> chunk record
//	journal      as format 1: key u64 BE sequence -> n >= 1 key hashes, CRC-32C
//
// Chain meta record (all integers little-endian):
//
//	off size
//	  0    4  magic "TRSC"
//	  4    2  format version (2; 3 once a fold committed, see below)
//	  6    1  layout (1 standard, 2 blocked), every sub-filter
//	  7    1  hash version (HashVersion)
//	  8    4  chunk size in bytes, every sub-filter (4 KiB .. 64 MiB)
//	 12    2  L, sub-filters (1 .. MaxSubfilters)
//	 14    2  reserved, 0
//	 16    8  initial n0
//	 24    8  target compound false-positive rate p, IEEE-754 bits
//	 32    8  growth s, IEEE-754 bits
//	 40    8  tightening r, IEEE-754 bits
//	 48       format 3 only, the fold header (16 bytes, offsets below from 48):
//	            0    4  F, growth indices the folded filter covers (0 .. F-1)
//	            4    4  reserved, 0
//	            8    8  fold generation (>= 1): its chunks' prefix in bloom_fold
//	 48/64    L sub-filter records, oldest first:
//	          off size
//	            0    8  capacity (n0·s^i, rounded up)
//	            8    8  m, bits
//	           16    2  k
//	           18    2  reserved, 0
//	           20    4  chunks = ceil(ceil(m/64)*8 / chunk size)
//	           24    8  items admitted as of this checkpoint
//	           32    8  set bits as of this checkpoint (informational)
//	           40    c  stored-chunk bitmap, c = ceil(chunks/8)
//	end    4  CRC-32C (Castagnoli) of every byte before it
//
// In format 2, record i is the sub-filter of growth index i (n0·s^i keys at
// p0·r^i). In format 3, record 0 is the folded filter (its own capacity,
// planned at p·(1−r^F); its chunks in bloom_fold under the generation) and
// record i >= 1 the sub-filter of growth index F+i−1. A chunk in
// bloom_chain of a growth index below F (left by a fold whose deletions did
// not commit with it) is ignored, and so is a generation in bloom_fold other
// than the one named (a fold cut short).
//
// Chunk, journal and cut records are format 1's (the cut record carries the
// chain meta record's checksum). The journal does not say which
// sub-filter a key went to: Load replays it through the chain, which adds
// the sub-filters a crawl grew after its last checkpoint again (their
// sizes follow from n0, s, r and p), so every journaled key tests seen.

// Names of format 2 in the shared bbolt file.
const (
	MetaKeyChain      = "chain"
	BucketChainChunks = "bloom_chain"
)

// FormatVersionChain is the version of the layout above.
const FormatVersionChain = 2

const (
	chainMagic      = "TRSC"
	chainHeaderSize = 48
	foldHeaderSize  = 16
	subHeaderSize   = 40
)

// chainMeta is the decoded chain meta record.
type chainMeta struct {
	layout      Layout
	hashVersion uint8
	chunkBytes  uint64
	initial     uint64
	fp          float64
	growth      float64
	tightening  float64
	subs        []meta // capacity, bits, k, words, chunks, items, setBits, stored
	// folded is F, the growth indices record 0 covers when it is a folded
	// filter (format 3), 0 otherwise; gen its generation.
	folded int
	gen    uint64
}

// growthIndex is the growth index of record i: the last one it covers.
func (m *chainMeta) growthIndex(i int) int {
	if m.folded == 0 {
		return i
	}
	return m.folded + i - 1
}

func (m *chainMeta) encode() []byte {
	le := binary.LittleEndian
	b := make([]byte, chainHeaderSize)
	copy(b, chainMagic)
	le.PutUint16(b[4:], FormatVersionChain)
	if m.folded > 0 {
		le.PutUint16(b[4:], FormatVersionFolded)
	}
	b[6] = byte(m.layout)
	b[7] = m.hashVersion
	le.PutUint32(b[8:], uint32(m.chunkBytes))
	le.PutUint16(b[12:], uint16(len(m.subs)))
	le.PutUint64(b[16:], m.initial)
	le.PutUint64(b[24:], math.Float64bits(m.fp))
	le.PutUint64(b[32:], math.Float64bits(m.growth))
	le.PutUint64(b[40:], math.Float64bits(m.tightening))
	if m.folded > 0 {
		b = le.AppendUint32(b, uint32(m.folded))
		b = le.AppendUint32(b, 0)
		b = le.AppendUint64(b, m.gen)
	}
	for _, s := range m.subs {
		b = le.AppendUint64(b, s.capacity)
		b = le.AppendUint64(b, s.bits)
		b = le.AppendUint16(b, uint16(s.k))
		b = le.AppendUint16(b, 0)
		b = le.AppendUint32(b, uint32(s.chunks))
		b = le.AppendUint64(b, s.items)
		b = le.AppendUint64(b, s.setBits)
		b = append(b, s.stored...)
	}
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeChainMeta parses and checks a chain meta record on its own; it does
// not compare it with what the caller wants.
func decodeChainMeta(b []byte) (*chainMeta, error) {
	if len(b) < chainHeaderSize+4 {
		return nil, fmt.Errorf("%w: chain meta record is %d bytes, want at least %d", ErrCorrupt, len(b), chainHeaderSize+4)
	}
	le := binary.LittleEndian
	if string(b[:4]) != chainMagic {
		return nil, fmt.Errorf("%w: chain meta record has magic %q, want %q", ErrCorrupt, b[:4], chainMagic)
	}
	body, sum := b[:len(b)-4], le.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, fmt.Errorf("%w: chain meta record checksum %08x, want %08x", ErrCorrupt, got, sum)
	}
	v := le.Uint16(b[4:])
	if v != FormatVersionChain && v != FormatVersionFolded {
		return nil, fmt.Errorf("%w: chain format version %d, this code reads %d and %d", ErrMismatch, v, FormatVersionChain, FormatVersionFolded)
	}
	m := &chainMeta{
		layout: Layout(b[6]), hashVersion: b[7], chunkBytes: uint64(le.Uint32(b[8:])),
		initial:    le.Uint64(b[16:]),
		fp:         math.Float64frombits(le.Uint64(b[24:])),
		growth:     math.Float64frombits(le.Uint64(b[32:])),
		tightening: math.Float64frombits(le.Uint64(b[40:])),
	}
	n := int(le.Uint16(b[12:]))
	cfg := ChainConfig{Initial: m.initial, FP: m.fp, Growth: m.growth, Tightening: m.tightening, Layout: m.layout, ChunkBytes: int(m.chunkBytes)}
	switch {
	case !m.layout.Valid():
		return nil, fmt.Errorf("%w: chain meta layout %d", ErrCorrupt, m.layout)
	case n < 1 || n > MaxSubfilters:
		return nil, fmt.Errorf("%w: chain meta has %d sub-filters", ErrCorrupt, n)
	case le.Uint16(b[14:]) != 0:
		return nil, fmt.Errorf("%w: chain meta reserved field set", ErrCorrupt)
	case m.initial == 0:
		return nil, fmt.Errorf("%w: chain meta initial capacity 0", ErrCorrupt)
	}
	if _, err := cfg.withDefaults(); err != nil {
		return nil, fmt.Errorf("%w: chain meta: %w", ErrCorrupt, err)
	}
	rest := body[chainHeaderSize:]
	if v == FormatVersionFolded {
		if len(rest) < foldHeaderSize {
			return nil, fmt.Errorf("%w: chain meta fold header truncated", ErrCorrupt)
		}
		folded := le.Uint32(rest)
		m.gen = le.Uint64(rest[8:])
		switch {
		case folded < 2 || int(folded)+n-1 > MaxSubfilters:
			return nil, fmt.Errorf("%w: chain meta folded filter covers %d growth indices", ErrCorrupt, folded)
		case le.Uint32(rest[4:]) != 0:
			return nil, fmt.Errorf("%w: chain meta fold header reserved field set", ErrCorrupt)
		case m.gen == 0:
			return nil, fmt.Errorf("%w: chain meta fold generation 0", ErrCorrupt)
		}
		m.folded = int(folded)
		rest = rest[foldHeaderSize:]
	}
	for i := range n {
		if len(rest) < subHeaderSize {
			return nil, fmt.Errorf("%w: chain meta sub-filter %d truncated", ErrCorrupt, i)
		}
		gi := m.growthIndex(i)
		wantCap, fp := cfg.subCapacity(gi), cfg.subFP(gi)
		if m.folded > 0 && i == 0 {
			wantCap, fp = le.Uint64(rest), cfg.foldFP(m.folded)
		}
		s := meta{
			layout: m.layout, hashVersion: m.hashVersion, chunkBytes: m.chunkBytes, fp: fp,
			capacity: le.Uint64(rest), bits: le.Uint64(rest[8:]), k: int(le.Uint16(rest[16:])),
			chunks: uint64(le.Uint32(rest[20:])), items: le.Uint64(rest[24:]), setBits: le.Uint64(rest[32:]),
		}
		s.words = (s.bits + 63) / 64
		c := (s.chunks + 7) / 8
		switch {
		case s.capacity != wantCap || s.capacity == 0:
			return nil, fmt.Errorf("%w: chain meta sub-filter %d capacity %d, want %d", ErrCorrupt, i, s.capacity, wantCap)
		case s.k < 1 || s.k > maxK:
			return nil, fmt.Errorf("%w: chain meta sub-filter %d k %d", ErrCorrupt, i, s.k)
		case s.bits == 0 || s.bits > maxBits:
			return nil, fmt.Errorf("%w: chain meta sub-filter %d bits %d", ErrCorrupt, i, s.bits)
		case s.layout == Blocked && s.bits%blockBits != 0:
			return nil, fmt.Errorf("%w: chain meta sub-filter %d bits %d not a whole number of blocks", ErrCorrupt, i, s.bits)
		case le.Uint16(rest[18:]) != 0:
			return nil, fmt.Errorf("%w: chain meta sub-filter %d reserved field set", ErrCorrupt, i)
		case s.chunks != (s.words*8+m.chunkBytes-1)/m.chunkBytes:
			return nil, fmt.Errorf("%w: chain meta sub-filter %d chunk count %d for %d words", ErrCorrupt, i, s.chunks, s.words)
		case uint64(len(rest)-subHeaderSize) < c:
			return nil, fmt.Errorf("%w: chain meta sub-filter %d chunk bitmap truncated", ErrCorrupt, i)
		}
		s.stored = rest[subHeaderSize : subHeaderSize+c]
		if s.chunks%8 != 0 && s.stored[len(s.stored)-1]>>(s.chunks%8) != 0 {
			return nil, fmt.Errorf("%w: chain meta sub-filter %d bitmap marks chunks past %d", ErrCorrupt, i, s.chunks)
		}
		m.subs = append(m.subs, s)
		rest = rest[subHeaderSize+c:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: chain meta record has %d trailing bytes", ErrCorrupt, len(rest))
	}
	return m, nil
}

// matches compares a stored chain with the configuration the caller wants,
// and each stored sub-filter with the plan for it.
func (m *chainMeta) matches(want ChainConfig) error {
	switch {
	case m.hashVersion != HashVersion:
		return mismatch("hash version", m.hashVersion, HashVersion)
	case m.layout != want.Layout:
		return mismatch("layout", m.layout, want.Layout)
	case m.initial != want.Initial:
		return mismatch("initial capacity", m.initial, want.Initial)
	case m.fp != want.FP:
		return mismatch("false-positive rate", m.fp, want.FP)
	case m.growth != want.Growth:
		return mismatch("growth", m.growth, want.Growth)
	case m.tightening != want.Tightening:
		return mismatch("tightening", m.tightening, want.Tightening)
	}
	for i, s := range m.subs {
		sz, err := m.sizing(want, i)
		if err != nil {
			return fmt.Errorf("dedup: sub-filter %d: %w", i, err)
		}
		if s.bits != sz.Bits || s.k != sz.K {
			return fmt.Errorf("%w: sub-filter %d is %d bits, k %d; its plan is %d bits, k %d", ErrCorrupt, i, s.bits, s.k, sz.Bits, sz.K)
		}
	}
	return nil
}

// sizing is the plan of record i under cfg: the folded filter's for its
// capacity, or the sub-filter's of its growth index.
func (m *chainMeta) sizing(cfg ChainConfig, i int) (Sizing, error) {
	if m.folded > 0 && i == 0 {
		return cfg.foldSizing(m.folded, m.subs[0].capacity)
	}
	return cfg.subSizing(m.growthIndex(i))
}

// subChunkKey is the key function of f's chunks and the bucket that holds
// them: bloom_fold under the generation for a folded filter, bloom_chain
// under its growth index for the others.
func (c *Chain) subChunkKey(f *Filter) (bucket string, key func(c int) []byte) {
	if f.folded {
		return BucketFold, foldChunkKey(c.foldGen)
	}
	return BucketChainChunks, chainChunkKey(f.gi)
}

// chainChunkKey is the key of chunk c of the sub-filter of growth index i.
func chainChunkKey(i int) func(c int) []byte {
	return func(c int) []byte {
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, uint32(i)), uint64(c))
	}
}

// metaLocked describes the chain with each sub-filter's stored-chunk
// bitmap. The sub-filters' ckpt locks must be held.
func (c *Chain) metaLocked(subs []*Filter, stored [][]uint64) *chainMeta {
	m := &chainMeta{
		layout: c.cfg.Layout, hashVersion: HashVersion, chunkBytes: uint64(c.cfg.ChunkBytes),
		initial: c.cfg.Initial, fp: c.cfg.FP, growth: c.cfg.Growth, tightening: c.cfg.Tightening,
	}
	if subs[0].folded {
		m.folded, m.gen = subs[0].gi+1, c.foldGen
	}
	for i, f := range subs {
		m.subs = append(m.subs, *f.metaLocked(stored[i]))
	}
	return m
}

// lockSubs takes every sub-filter's checkpoint lock and returns the unlock.
func lockSubs(subs []*Filter) func() {
	for _, f := range subs {
		f.ckpt.Lock()
	}
	return func() {
		for _, f := range subs {
			f.ckpt.Unlock()
		}
	}
}

// Checkpoint writes every sub-filter's chunks changed since the last
// committed checkpoint and the chain meta record into tx, and drops the
// journal. It takes effect only if tx commits, as Filter.Checkpoint.
func (c *Chain) Checkpoint(tx *bolt.Tx) (CheckpointStats, error) {
	_, st, err := c.checkpoint(tx, nil)
	return st, err
}

// CheckpointChunks is a part of a checkpoint too big for one transaction,
// as Filter.CheckpointChunks: at most maxBytes of the sub-filters' changed
// chunks and the chain meta record; it reports whether changed chunks
// remain, and drops the journal only when none do (in a round, see
// BeginCheckpoint, the chunks and journal records the round owes).
func (c *Chain) CheckpointChunks(tx *bolt.Tx, maxBytes int64) (more bool, st CheckpointStats, err error) {
	return c.checkpoint(tx, &chunkBudget{left: maxBytes})
}

// BeginCheckpoint begins a round, as Filter.BeginCheckpoint: its parts
// write every sub-filter's chunks changed until now (a sub-filter added
// during the round has none to write), and its last part truncates the
// journal up to the last record tx shows.
func (c *Chain) BeginCheckpoint(tx *bolt.Tx) error {
	if err := refuseMixed(tx, ModeScalable); err != nil {
		return err
	}
	c.ckpt.Lock()
	defer c.ckpt.Unlock()
	subs := *c.subs.Load()
	defer lockSubs(subs)()
	c.round = round{active: true, cut: journalSeq(tx)}
	for _, f := range subs {
		f.beginRoundLocked()
	}
	return nil
}

// checkpoint is Checkpoint, or with a budget CheckpointChunks.
func (c *Chain) checkpoint(tx *bolt.Tx, budget *chunkBudget) (more bool, _ CheckpointStats, _ error) {
	start := time.Now()
	if err := refuseMixed(tx, ModeScalable); err != nil {
		return false, CheckpointStats{}, err
	}
	c.ckpt.Lock()
	defer c.ckpt.Unlock()
	if err := c.settleLocked(tx); err != nil {
		return false, CheckpointStats{}, err
	}
	subs := *c.subs.Load()
	defer lockSubs(subs)()
	rd := c.round
	if budget == nil || !rd.active {
		c.round, rd = round{}, round{}
		for _, f := range subs {
			f.endRoundLocked()
		}
	}
	var st CheckpointStats
	writes := make([]chunkWrite, 0, len(subs))
	undo := func() {
		for i, w := range writes {
			w.undo(subs[i])
		}
	}
	for _, f := range subs {
		name, key := c.subChunkKey(f)
		bucket, err := tx.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			undo()
			return false, CheckpointStats{}, fmt.Errorf("dedup: checkpoint: %w", err)
		}
		w, err := f.writeChunksLocked(bucket, key, &st, budget, rd.active)
		if err != nil {
			undo()
			return false, CheckpointStats{}, err
		}
		writes = append(writes, w)
	}
	stored := make([][]uint64, len(subs))
	for i, w := range writes {
		stored[i] = w.stored
	}
	if err := putChainMeta(tx, c.metaLocked(subs, stored)); err != nil {
		undo()
		return false, CheckpointStats{}, err
	}
	for _, f := range subs {
		if rd.active {
			more = more || f.todoLeft()
		} else {
			more = more || (budget != nil && f.anyDirty())
		}
	}
	if !more {
		if err := truncateJournal(tx, rd); err != nil {
			undo()
			return false, CheckpointStats{}, err
		}
		// The round is over (see Filter.checkpoint).
		c.round = round{}
		for _, f := range subs {
			f.endRoundLocked()
		}
	}
	if err := putCut(tx, MetaKeyChain); err != nil {
		undo()
		return false, CheckpointStats{}, err
	}
	for i, w := range writes {
		w.commitOnLocked(subs[i], tx)
	}
	st.Duration = time.Since(start)
	return more, st, nil
}

func putChainMeta(tx *bolt.Tx, m *chainMeta) error {
	b, err := tx.CreateBucketIfNotExists([]byte(BucketMeta))
	if err != nil {
		return fmt.Errorf("dedup: write chain meta: %w", err)
	}
	if err := b.Put([]byte(MetaKeyChain), m.encode()); err != nil {
		return fmt.Errorf("dedup: write chain meta: %w", err)
	}
	return nil
}

// AppendJournal records, inside tx, the hashes of keys admitted as new since
// the last checkpoint, as Filter.AppendJournal. The first call on a fresh
// file also writes the chain meta record.
func (c *Chain) AppendJournal(tx *bolt.Tx, hs []uint64) error {
	if len(hs) == 0 {
		return nil
	}
	if !hasMeta(tx, MetaKeyChain) {
		if err := refuseMixed(tx, ModeScalable); err != nil {
			return err
		}
		c.ckpt.Lock()
		if err := c.settleLocked(tx); err != nil {
			c.ckpt.Unlock()
			return err
		}
		subs := *c.subs.Load()
		unlock := lockSubs(subs)
		stored := make([][]uint64, len(subs))
		for i, f := range subs {
			stored[i] = f.ckpt.persisted
		}
		err := putChainMeta(tx, c.metaLocked(subs, stored))
		unlock()
		c.ckpt.Unlock()
		if err != nil {
			return err
		}
		return appendJournalCut(tx, hs, MetaKeyChain)
	}
	return appendJournal(tx, hs)
}

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
// FP, Growth, Tightening, Layout, ChunkBytes; Capacity and MaxBytes are not
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
	return ChainConfig{Initial: m.initial, FP: m.fp, Growth: m.growth, Tightening: m.tightening, Layout: m.layout, ChunkBytes: int(m.chunkBytes)}, nil
}

// LoadChain rebuilds the scalable filter stored in tx, as Load does a fixed
// one: it checks the chain meta record against want (ErrMismatch naming the
// field), reads every sub-filter's chunks, and replays the journal through
// the chain, adding again the sub-filters grown since the last checkpoint.
// want's Capacity and MaxBytes are taken as given: they may change between
// runs. tx may be read-only.
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
