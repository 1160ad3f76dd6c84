package dedup

import (
	"fmt"
	"math"
)

// ChainPlan is the chain a scalable filter grows to hold Capacity keys,
// next to the fixed filter sized for the same count.
type ChainPlan struct {
	Config     ChainConfig // defaults filled in
	Subfilters []Sizing    // oldest first; the last is the one filling at Capacity
	Bits       uint64      // over every sub-filter
	Bytes      uint64      // over every sub-filter
	// CompoundFP is the rate at Capacity: 1 − Π(1 − fp_i), each sub-filter
	// at its fill (the last one partly filled). It stays under Config.FP.
	CompoundFP float64
	// LinesPerKey is the expected number of cache lines a new key reads at
	// Capacity: Standard reads about (1 − f^k)/(1 − f) positions of each
	// older sub-filter of fill f before a clear bit dismisses it, plus the
	// k it sets in the newest; Blocked reads one line per sub-filter.
	LinesPerKey float64
	Fixed       Sizing  // the fixed filter for Capacity at Config.FP
	FixedLines  float64 // its lines per new key: k, or 1 when Blocked
	MemoryRatio float64 // Bytes / Fixed.Bytes

	// Folded is the same chain folded whenever FoldAdvised (at three
	// sub-filters): at Capacity, one folded filter for the keys of every
	// sub-filter but the newest, and the newest. With fewer than three
	// sub-filters ever it is the chain itself.
	Folded FoldedPlan
}

// FoldedPlan is a chain kept folded (see ChainPlan.Folded).
type FoldedPlan struct {
	Subfilters  []Sizing // the folded filter, then the newest
	Bytes       uint64
	CompoundFP  float64
	LinesPerKey float64
	MemoryRatio float64 // Bytes / Fixed.Bytes
	// PeakBytes is the most the chain held on the way to Capacity: during
	// the last fold, the chain it folds and the filter it builds.
	PeakBytes uint64
}

// PlanChain plans the chain that cfg grows into by cfg.Capacity keys (which
// must be set).
func PlanChain(cfg ChainConfig) (ChainPlan, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return ChainPlan{}, err
	}
	if cfg.Capacity == 0 {
		return ChainPlan{}, fmt.Errorf("%w: a chain plan needs a capacity", ErrInvalid)
	}
	p := ChainPlan{Config: cfg}
	if p.Fixed, err = PlanLayout(cfg.Capacity, cfg.FP, cfg.Layout); err != nil {
		return ChainPlan{}, err
	}
	p.FixedLines = float64(p.Fixed.K)
	if cfg.Layout == Blocked {
		p.FixedLines = 1
	}
	left := cfg.Capacity
	miss := 1.0
	for i := 0; left > 0; i++ {
		sz, err := cfg.subSizing(i)
		if err != nil {
			return ChainPlan{}, err
		}
		n := min(left, sz.Capacity)
		left -= n
		p.Subfilters = append(p.Subfilters, sz)
		p.Bits += sz.Bits
		p.Bytes += sz.Bytes
		fp, fill := fpAt(sz, float64(n))
		miss *= 1 - fp
		switch {
		case cfg.Layout == Blocked:
			p.LinesPerKey++
		case left == 0:
			p.LinesPerKey += float64(sz.K)
		default:
			p.LinesPerKey += (1 - math.Pow(fill, float64(sz.K))) / (1 - fill)
		}
	}
	p.CompoundFP = 1 - miss
	p.MemoryRatio = float64(p.Bytes) / float64(p.Fixed.Bytes)
	if p.Folded, err = planFolded(cfg, p.Subfilters, p.Fixed); err != nil {
		return ChainPlan{}, err
	}
	return p, nil
}

// planFolded plans the chain of subs (as PlanChain grows it to
// cfg.Capacity) folded at every third sub-filter.
func planFolded(cfg ChainConfig, subs []Sizing, fixed Sizing) (FoldedPlan, error) {
	var fp FoldedPlan
	last := len(subs) - 1
	var before uint64 // keys of every sub-filter but the newest
	for _, sz := range subs[:last] {
		before += sz.Capacity
	}
	newestKeys := cfg.Capacity - before
	chain := subs
	if last >= 2 {
		sz, err := cfg.foldSizing(last, uint64(math.Ceil(float64(before)*(1+cfg.foldFP(last)))))
		if err != nil {
			return fp, err
		}
		chain = []Sizing{sz, subs[last]}
		// The last fold folded the previous folded filter (or sub-filters
		// 0 and 1) and sub-filter last-1, beside the newest.
		var prev uint64 = subs[0].Bytes
		if last >= 3 {
			pc := before - subs[last-1].Capacity
			ps, err := cfg.foldSizing(last-1, uint64(math.Ceil(float64(pc)*(1+cfg.foldFP(last-1)))))
			if err != nil {
				return fp, err
			}
			prev = ps.Bytes
		}
		fp.PeakBytes = prev + subs[last-1].Bytes + subs[last].Bytes + sz.Bytes
	}
	miss := 1.0
	for i, sz := range chain {
		n := float64(sz.Capacity)
		if i == len(chain)-1 {
			n = float64(newestKeys)
		} else if len(chain) == 2 && last >= 2 {
			n = float64(before)
		}
		fp.Bytes += sz.Bytes
		f, fill := fpAt(sz, n)
		miss *= 1 - f
		switch {
		case cfg.Layout == Blocked:
			fp.LinesPerKey++
		case i == len(chain)-1:
			fp.LinesPerKey += float64(sz.K)
		default:
			fp.LinesPerKey += (1 - math.Pow(fill, float64(sz.K))) / (1 - fill)
		}
	}
	fp.Subfilters = chain
	fp.CompoundFP = 1 - miss
	fp.MemoryRatio = float64(fp.Bytes) / float64(fixed.Bytes)
	fp.PeakBytes = max(fp.PeakBytes, fp.Bytes)
	return fp, nil
}

// fpAt is a filter's expected false-positive rate and bit fill after n keys.
func fpAt(s Sizing, n float64) (fp, fill float64) {
	fill = -math.Expm1(-float64(s.K) * n / float64(s.Bits))
	switch s.Layout {
	case Blocked:
		return blockedFP(s.K, n/float64(s.Bits/blockBits)), fill
	case Paged:
		return pagedFP(s.Bits, s.K, n), fill
	}
	return standardFP(s.Bits, s.K, n), fill
}
