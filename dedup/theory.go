package dedup

import (
	"math"
	"sync"
)

// The blocked layout's false-positive rate, computed exactly for its scheme:
// a key picks one of B blocks uniformly and sets k positions drawn uniformly,
// with replacement, from the block's 512 bits; a probe is a false positive
// when its k positions are all set. With n keys the load of a block is
// Poisson(λ = n/B); a block that received j keys has had jk uniform throws,
// and the distribution of its set-bit count X after t throws follows the
// occupancy recurrence below. The rate is Σ_j Pois(j; λ) E[(X_jk/512)^k].
// Unlike (1 - e^(-kλ/512))^k it accounts for uneven block loads, which is
// why a blocked filter needs more bits per key than a standard one.

// blockedTheory holds E[(X/512)^k] after j keys, j = 0, 1, ..., extended on
// demand.
type blockedTheory struct {
	k    int
	dist []float64 // distribution of X after len(e)-1 keys
	pw   []float64 // (x/512)^k
	e    []float64 // e[j] = E[(X/512)^k] after j keys
}

// theories caches one blockedTheory per k; the tables are small and only grow.
var theories struct {
	sync.Mutex
	byK map[int]*blockedTheory
}

// blockedFP is the blocked layout's rate with k bits per key at an average of
// lambda keys per block.
func blockedFP(k int, lambda float64) float64 {
	theories.Lock()
	defer theories.Unlock()
	if theories.byK == nil {
		theories.byK = map[int]*blockedTheory{}
	}
	t := theories.byK[k]
	if t == nil {
		t = newBlockedTheoryLocked(k)
		theories.byK[k] = t
	}
	return t.fp(lambda)
}

// newBlockedTheory returns an evaluator bound to k; its fp method is safe
// for concurrent use.
func newBlockedTheory(k int) theoryFunc { return theoryFunc(k) }

type theoryFunc int

func (k theoryFunc) fp(lambda float64) float64 { return blockedFP(int(k), lambda) }

func newBlockedTheoryLocked(k int) *blockedTheory {
	t := &blockedTheory{k: k, dist: make([]float64, blockBits+1), pw: make([]float64, blockBits+1)}
	t.dist[0] = 1
	for x := range t.pw {
		t.pw[x] = math.Pow(float64(x)/blockBits, float64(k))
	}
	t.e = []float64{0}
	return t
}

// maxExactLambda bounds the exact computation; past it a block is so full
// that the mean-field formula is exact to many digits.
const maxExactLambda = 4096

func (t *blockedTheory) fp(lambda float64) float64 {
	if lambda <= 0 {
		return 0
	}
	if lambda > maxExactLambda {
		return math.Pow(-math.Expm1(lambda*float64(t.k)*math.Log1p(-1.0/blockBits)), float64(t.k))
	}
	jmax := int(lambda+12*math.Sqrt(lambda)) + 30
	t.extend(jmax)
	var sum float64
	lnl := math.Log(lambda)
	for j := 0; j <= jmax; j++ {
		lg, _ := math.Lgamma(float64(j + 1))
		sum += math.Exp(-lambda+float64(j)*lnl-lg) * t.e[j]
	}
	return min(sum, 1)
}

// extend runs the occupancy recurrence until e covers jmax keys. One throw
// moves X from x to x+1 with probability (512-x)/512.
func (t *blockedTheory) extend(jmax int) {
	d := t.dist
	for j := len(t.e); j <= jmax; j++ {
		for range t.k {
			for x := blockBits; x >= 1; x-- {
				d[x] = d[x]*float64(x)/blockBits + d[x-1]*float64(blockBits-x+1)/blockBits
			}
			d[0] = 0
		}
		var e float64
		for x, p := range d {
			e += p * t.pw[x]
		}
		t.e = append(t.e, e)
	}
}

// The paged layout's false-positive rate. A key picks a bit of the array
// uniformly and uses the page that holds it (pageBits, the last page
// pageBits to 2·pageBits-1, or the whole of an array smaller than a page),
// so a page of s bits receives each key with probability
// q = s/m: its load is Binomial(n, q). Its k positions are drawn uniformly,
// with replacement, from the page, as a probe's are; a page that received j
// keys has a bit clear with probability (1-1/s)^(jk), and a probe there is
// a false positive with probability about (1 - (1-1/s)^(jk))^k (the
// mean-field value; a page's fill varies little at 32,768 bits). The rate
// is the load-weighted sum over the whole pages and the last one. With one
// page it is the textbook rate of k independent positions.

// pagedFP is the paged layout's rate after n keys in m bits with k bits per
// key.
func pagedFP(m uint64, k int, n float64) float64 {
	switch {
	case n <= 0 || m == 0:
		return 0
	case math.IsInf(n, 1) || math.IsNaN(n):
		return 1
	}
	pages := max(m/pageBits, 1)
	last := m - (pages-1)*pageBits
	sum := float64(last) / float64(m) * pageFP(last, m, k, n)
	if pages > 1 {
		sum += float64((pages-1)*pageBits) / float64(m) * pageFP(pageBits, m, k, n)
	}
	return min(sum, 1)
}

// maxPageSD bounds the loads pageFP sums over (24 standard deviations).
const maxPageSD = 1000

// pageFP is the rate of a probe landing in one page of s of the m bits,
// averaged over the page's Binomial(n, s/m) load.
func pageFP(s, m uint64, k int, n float64) float64 {
	q := float64(s) / float64(m)
	at := func(j float64) float64 {
		return math.Pow(-math.Expm1(j*float64(k)*math.Log1p(-1/float64(s))), float64(k))
	}
	mean := n * q
	sd := math.Sqrt(mean * (1 - q))
	if sd < 1e-9 || sd > maxPageSD {
		// One page, whose load is n; or loads so large against the page
		// (sd > 1,000 is a million keys in 32,768 bits) that every bit is
		// set and the mean-field value is exact.
		return at(mean)
	}
	lo := max(0, math.Floor(mean-12*sd-30))
	hi := min(n, math.Ceil(mean+12*sd+30))
	lgn, _ := math.Lgamma(n + 1)
	lq, lp := math.Log(q), math.Log1p(-q)
	var sum float64
	for j := lo; j <= hi; j++ {
		lj, _ := math.Lgamma(j + 1)
		lr, _ := math.Lgamma(n - j + 1)
		sum += math.Exp(lgn-lj-lr+j*lq+(n-j)*lp) * at(j)
	}
	return sum
}
