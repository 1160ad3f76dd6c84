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

	// Folded is the chain kept folded (ChainConfig.Fold: sized by budget,
	// folded whenever FoldAdvised): at Capacity, one folded filter for
	// the keys of every sub-filter but the newest, at p/2, and the newest.
	// With one sub-filter ever it is that sub-filter. The fields above
	// plan the chain that never folds (sized by growth index).
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
// cfg.Capacity) kept folded under the budget rule (ChainConfig.Fold):
// every growth folds all but the newest sub-filter into one filter at
// p/2 before the next growth, so the chain at Capacity is that filter,
// holding the keys of every sub-filter but the newest, and the newest, at
// the rate the budget gave it beside the one before it.
func planFolded(cfg ChainConfig, subs []Sizing, fixed Sizing) (FoldedPlan, error) {
	var fp FoldedPlan
	cfg.Fold = true
	last := len(subs) - 1
	var before uint64 // keys of every sub-filter but the newest
	for _, sz := range subs[:last] {
		before += sz.Capacity
	}
	newestKeys := cfg.Capacity - before
	// Growth index i is added beside the folded filter and i−1.
	var rates []float64
	for i := range subs {
		used := 0.0
		if i > 0 {
			used = rates[i-1]
		}
		rates = append(rates, cfg.budgetFP(used))
	}
	newest := func(i int) (Sizing, error) { return cfg.subSizingAt(i, rates[i]) }
	folded := func(keys uint64) (Sizing, error) {
		return PlanLayout(uint64(math.Ceil(float64(keys)*(1+cfg.foldedFP()))), cfg.foldedFP(), cfg.Layout)
	}
	sz, err := newest(last)
	if err != nil {
		return fp, err
	}
	chain := []Sizing{sz}
	keys := []float64{float64(newestKeys)}
	if last >= 1 {
		f, err := folded(before)
		if err != nil {
			return fp, err
		}
		chain = []Sizing{f, sz}
		keys = []float64{float64(before), float64(newestKeys)}
		// The last fold folded the folded filter before it (or sub-filter
		// 0) and sub-filter last−1, beside the newest.
		prev, err := newest(last - 1)
		if err != nil {
			return fp, err
		}
		fp.PeakBytes = prev.Bytes + sz.Bytes + f.Bytes
		if last >= 2 {
			pf, err := folded(before - subs[last-1].Capacity)
			if err != nil {
				return fp, err
			}
			fp.PeakBytes += pf.Bytes
		}
	}
	miss := 1.0
	for i, sz := range chain {
		fp.Bytes += sz.Bytes
		f, fill := fpAt(sz, keys[i])
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
