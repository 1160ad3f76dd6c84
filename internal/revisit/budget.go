package revisit

import (
	"math"
	"time"
)

// The policies of Cho and Garcia-Molina's comparison computed from true
// change rates, for a benchmark or a check that knows them (the
// synthetic web does): what a crawl's measured freshness is held against.

// OptimalIntervals returns, for pages with the given Poisson change rates
// (per second; 0: never changes), the intervals of Cho and
// Garcia-Molina's optimal policy for freshness at a budget of fetches per
// second: the price mu at which the intervals spend the budget exactly
// (found by bisection), and each page's interval at that price, 0 for a
// page the policy does not revisit (it never changes, or changes too
// often to be worth its fetches).
func OptimalIntervals(rates []float64, budget float64) (intervals []time.Duration, mu float64) {
	spend := func(mu float64) (f float64, iv []time.Duration) {
		iv = make([]time.Duration, len(rates))
		for i, r := range rates {
			if d, ok := optimalInterval(r, mu); ok {
				iv[i] = d
				f += 1 / d.Seconds()
			}
		}
		return f, iv
	}
	lo, hi := 1e-6, 1e9 // the spend decreases in mu
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if f, _ := spend(mid); f > budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	_, intervals = spend(hi)
	return intervals, hi
}

// SteadyFreshness is the expected freshness of a page with change rate
// lambda (per second) visited every interval, in the steady state:
// (1 - e^(-lambda*I)) / (lambda*I). A page that never changes is fresh
// (1) once fetched; a changing page never revisited (interval 0) is,
// in the long run, stale (0).
func SteadyFreshness(lambda float64, interval time.Duration) float64 {
	switch {
	case lambda <= 0:
		return 1
	case interval <= 0:
		return 0
	}
	x := lambda * interval.Seconds()
	return -math.Expm1(-x) / x
}

// PolicyFreshness is the steady-state freshness, averaged over the pages,
// of the uniform policy (every page at the same interval) and of the
// optimal one, for pages with the given change rates at a budget of
// fetches per second.
func PolicyFreshness(rates []float64, budget float64) (uniform, optimal float64) {
	if len(rates) == 0 || budget <= 0 {
		return 0, 0
	}
	period := time.Duration(float64(len(rates)) / budget * float64(time.Second))
	opt, _ := OptimalIntervals(rates, budget)
	for i, r := range rates {
		uniform += SteadyFreshness(r, period)
		optimal += SteadyFreshness(r, opt[i])
	}
	n := float64(len(rates))
	return uniform / n, optimal / n
}
