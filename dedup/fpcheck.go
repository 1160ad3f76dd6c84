package dedup

import (
	"fmt"
	"math"
	"strconv"
)

// FPCheckResult is the outcome of the classic false-positive experiment.
type FPCheckResult struct {
	Sizing         Sizing  `json:"-"`
	Inserted       uint64  `json:"inserted"`
	Probes         uint64  `json:"probes"`
	FalseNegatives uint64  `json:"false_negatives"` // must be 0
	FalsePositives uint64  `json:"false_positives"`
	FPRate         float64 `json:"fp_rate"`
	FPRateLow      float64 `json:"fp_rate_low"`  // 95% Wilson interval
	FPRateHigh     float64 `json:"fp_rate_high"` // 95% Wilson interval
	ExpectedFP     float64 `json:"expected_fp"`  // theory at capacity
}

// FPCheck builds a filter of layout l for capacity items at rate fp, inserts
// "user:0" .. "user:<capacity-1>", checks every one of them is found (a miss
// is a false negative, which a Bloom filter must never have), then probes
// "ghost:0" .. "ghost:<probes-1>", never inserted, and measures how many it
// wrongly reports seen.
func FPCheck(capacity uint64, fp float64, probes uint64, l Layout) (FPCheckResult, error) {
	f, err := New(capacity, fp, WithLayout(l))
	if err != nil {
		return FPCheckResult{}, err
	}
	defer f.Close()
	r := FPCheckResult{Sizing: f.Sizing(), Inserted: capacity, Probes: probes, ExpectedFP: f.Sizing().ExpectedFP}
	var hs [hashBatch]uint64
	var seen [hashBatch]bool
	var buf []byte
	batches := func(prefix string, count uint64, fn func(hs []uint64)) {
		for start := uint64(0); start < count; start += hashBatch {
			n := min(hashBatch, count-start)
			for i := range n {
				buf = strconv.AppendUint(append(buf[:0], prefix...), start+i, 10)
				hs[i] = Hash(buf)
			}
			fn(hs[:n])
		}
	}
	batches("user:", capacity, func(hs []uint64) { f.TestAndAddHashes(hs, seen[:len(hs)]) })
	batches("user:", capacity, func(hs []uint64) {
		for _, h := range hs {
			if !f.TestHash(h) {
				r.FalseNegatives++
			}
		}
	})
	batches("ghost:", probes, func(hs []uint64) {
		for _, h := range hs {
			if f.TestHash(h) {
				r.FalsePositives++
			}
		}
	})
	if probes > 0 {
		r.FPRate = float64(r.FalsePositives) / float64(probes)
		r.FPRateLow, r.FPRateHigh = wilson(r.FalsePositives, probes)
	}
	if err := f.Close(); err != nil {
		return r, fmt.Errorf("dedup: fpcheck: %w", err)
	}
	return r, nil
}

// wilson is the 95% Wilson score interval of a proportion x/n.
func wilson(x, n uint64) (lo, hi float64) {
	const z = 1.959963984540054
	p, fn := float64(x)/float64(n), float64(n)
	den := 1 + z*z/fn
	mid := (p + z*z/(2*fn)) / den
	half := z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn)) / den
	return max(0, mid-half), min(1, mid+half)
}
