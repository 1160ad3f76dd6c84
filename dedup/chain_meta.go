package dedup

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
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
//	  4    2  format version (2; 3 once a fold committed; 4 by budget, see below)
//	  6    1  layout (1 standard, 2 blocked), every sub-filter
//	  7    1  hash version (HashVersion)
//	  8    4  chunk size in bytes, every sub-filter (4 KiB .. 64 MiB)
//	 12    2  L, sub-filters (1 .. MaxSubfilters)
//	 14    2  reserved, 0
//	 16    8  initial n0
//	 24    8  target compound false-positive rate p, IEEE-754 bits
//	 32    8  growth s, IEEE-754 bits
//	 40    8  tightening r, IEEE-754 bits
//	 48       formats 3 and 4, the fold header (16 bytes, offsets below from 48):
//	            0    4  F, growth indices the folded filter covers (0 .. F-1);
//	                    format 4: 0 before the first fold
//	            4    4  reserved, 0
//	            8    8  fold generation (>= 1; 0 iff F is 0): its chunks'
//	                    prefix in bloom_fold
//	 48/64    L sub-filter records, oldest first:
//	          off size
//	            0    8  capacity (n0·s^i, rounded up)
//	            8    8  m, bits
//	           16    2  k
//	           18    2  reserved, 0
//	           20    4  chunks = ceil(ceil(m/64)*8 / chunk size)
//	           24    8  items admitted as of this checkpoint
//	           32    8  set bits as of this checkpoint (informational)
//	           40    8  format 4 only: its false-positive rate, IEEE-754 bits
//	        40/48    c  stored-chunk bitmap, c = ceil(chunks/8)
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
// Format 4 is a chain sized by budget (ChainConfig.Fold, chain.go): the
// folded filter at p/2, every other sub-filter at the rate it was given
// when it was added (from the budget its elders left), stored in its
// record since it no longer follows from the growth index. Records are
// numbered as in format 3 (format 2's when F is 0). The loader refuses
// (ErrCorrupt) a rate that is not in (0, 1), a folded filter over p/2,
// and the others' rates summing over p/2: together they stay under p.
// The chain keeps the rule it was created with: a format 2 or 3 chain
// grows and folds by growth index, a format 4 one by budget.
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
	rateSize        = 8 // a format 4 record's rate
)

// FormatVersionBudget is the chain meta record's version for a chain
// sized by budget (ChainConfig.Fold): format 3 with each sub-filter's
// rate in its record.
const FormatVersionBudget = 4

// rateSlack is the rounding the loader allows on the sum of the rates.
const rateSlack = 1e-9

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
	// filter (formats 3 and 4), 0 otherwise; gen its generation.
	folded int
	gen    uint64
	// budget: the chain is sized by budget (format 4), each record's rate
	// stored in it.
	budget bool
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
	switch {
	case m.budget:
		le.PutUint16(b[4:], FormatVersionBudget)
	case m.folded > 0:
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
	if m.folded > 0 || m.budget {
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
		if m.budget {
			b = le.AppendUint64(b, math.Float64bits(s.fp))
		}
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
	if v != FormatVersionChain && v != FormatVersionFolded && v != FormatVersionBudget {
		return nil, fmt.Errorf("%w: chain format version %d, this code reads %d to %d", ErrMismatch, v, FormatVersionChain, FormatVersionBudget)
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
	m.budget = v == FormatVersionBudget
	if v != FormatVersionChain {
		if len(rest) < foldHeaderSize {
			return nil, fmt.Errorf("%w: chain meta fold header truncated", ErrCorrupt)
		}
		folded := le.Uint32(rest)
		m.gen = le.Uint64(rest[8:])
		least := uint32(2) // format 3: a fold of two growth indices or more
		if m.budget {
			least = 1
		}
		switch {
		case le.Uint32(rest[4:]) != 0:
			return nil, fmt.Errorf("%w: chain meta fold header reserved field set", ErrCorrupt)
		case m.budget && folded == 0 && m.gen == 0:
			// Sized by budget, not folded yet.
		case folded < least || uint64(folded)+uint64(n)-1 > MaxSubfilters:
			return nil, fmt.Errorf("%w: chain meta folded filter covers %d growth indices", ErrCorrupt, folded)
		case m.gen == 0:
			return nil, fmt.Errorf("%w: chain meta fold generation 0", ErrCorrupt)
		}
		m.folded = int(folded)
		rest = rest[foldHeaderSize:]
	}
	head := subHeaderSize
	if m.budget {
		head += rateSize
	}
	var unfolded float64 // the rates of the records but the folded one
	for i := range n {
		if len(rest) < head {
			return nil, fmt.Errorf("%w: chain meta sub-filter %d truncated", ErrCorrupt, i)
		}
		gi := m.growthIndex(i)
		wantCap, fp := cfg.subCapacity(gi), cfg.subFP(gi)
		if m.folded > 0 && i == 0 {
			wantCap, fp = le.Uint64(rest), cfg.foldFP(m.folded)
		}
		if m.budget {
			fp = math.Float64frombits(le.Uint64(rest[subHeaderSize:]))
			switch {
			case !(fp > 0 && fp < 1):
				return nil, fmt.Errorf("%w: chain meta sub-filter %d rate %v is not in (0, 1)", ErrCorrupt, i, fp)
			case m.folded > 0 && i == 0:
				if fp > cfg.foldedFP()*(1+rateSlack) {
					return nil, fmt.Errorf("%w: chain meta folded filter rate %v, over its budget %v", ErrCorrupt, fp, cfg.foldedFP())
				}
			default:
				if unfolded += fp; unfolded > (cfg.FP-cfg.foldedFP())*(1+rateSlack) {
					return nil, fmt.Errorf("%w: chain meta sub-filters' rates sum to %v through sub-filter %d, over their budget %v", ErrCorrupt, unfolded, i, cfg.FP-cfg.foldedFP())
				}
			}
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
		case uint64(len(rest)-head) < c:
			return nil, fmt.Errorf("%w: chain meta sub-filter %d chunk bitmap truncated", ErrCorrupt, i)
		}
		s.stored = rest[head : uint64(head)+c]
		if s.chunks%8 != 0 && s.stored[len(s.stored)-1]>>(s.chunks%8) != 0 {
			return nil, fmt.Errorf("%w: chain meta sub-filter %d bitmap marks chunks past %d", ErrCorrupt, i, s.chunks)
		}
		m.subs = append(m.subs, s)
		rest = rest[uint64(head)+c:]
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
// capacity, or the sub-filter's of its growth index; by budget, at the
// record's rate.
func (m *chainMeta) sizing(cfg ChainConfig, i int) (Sizing, error) {
	switch {
	case m.budget && m.folded > 0 && i == 0:
		return PlanLayout(m.subs[0].capacity, m.subs[0].fp, cfg.Layout)
	case m.budget:
		return cfg.subSizingAt(m.growthIndex(i), m.subs[i].fp)
	case m.folded > 0 && i == 0:
		return cfg.foldSizing(m.folded, m.subs[0].capacity)
	}
	return cfg.subSizing(m.growthIndex(i))
}
