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
