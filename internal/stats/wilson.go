package stats

import "math"

// z95 is the standard normal quantile of 0.975: a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson returns k/n and the Wilson score 95% interval of that binomial
// proportion, clamped to [0, 1]; all zero when n is 0. Unlike the normal
// approximation it stays inside [0, 1] and is not empty at k = 0, which
// is what a filter's measured false-positive rate usually is at small n.
func Wilson(k, n uint64) (p, low, high float64) {
	if n == 0 {
		return 0, 0, 0
	}
	nf := float64(n)
	p = float64(k) / nf
	den := 1 + z95*z95/nf
	centre := (p + z95*z95/(2*nf)) / den
	half := z95 * math.Sqrt(p*(1-p)/nf+z95*z95/(4*nf*nf)) / den
	return p, max(0, centre-half), min(1, centre+half)
}
