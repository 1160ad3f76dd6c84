package store

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// SealedGens holds what a []uint64 would, in order, through adds and
// drops from the front, whatever the gaps (from 1 to 2^40, so that a
// dropped gen's varint is shorter or longer than the next one's), and
// its bytes are what the host record stores: the first gen, then the
// differences.
func TestSealedGens(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var g SealedGens
		var want []uint64
		gen := uint64(rng.IntN(3))
		for op := range 300 {
			if len(want) > 0 && rng.IntN(3) == 0 {
				g.dropFirst()
				want = want[1:]
			} else {
				gen += 1 + uint64(rng.Int64N(1<<uint(rng.IntN(41))))
				if rng.IntN(2) == 0 {
					g.Add(gen)
				} else {
					g.addAfter(g.Last(), gen)
				}
				want = append(want, gen)
			}
			if got := g.List(); !slices.Equal(got, want) || g.Count() != len(want) || (len(want) == 0) != (len(g) == 0) {
				t.Fatalf("round %d op %d: %v (count %d), want %v", round, op, got, g.Count(), want)
			}
			if len(want) > 0 && (g.First() != want[0] || g.Last() != want[len(want)-1]) {
				t.Fatalf("round %d op %d: first %d last %d, want %d and %d", round, op, g.First(), g.Last(), want[0], want[len(want)-1])
			}
			if canon := SealedGensOf(want...); !slices.Equal(canon, g) {
				t.Fatalf("round %d op %d: bytes %x, want %x", round, op, []byte(g), []byte(canon))
			}
		}
	}
}

// A gen costs a byte when a host's consecutive gens are under 128 apart
// (a compaction of 2M is about 20 transactions, each a gen): a host with
// a gen from each of 500 compactions holds 500 bytes, not 4,000.
func TestSealedGensBytesPerGen(t *testing.T) {
	t.Parallel()
	var g SealedGens
	for i := range 500 {
		g.Add(1000 + 20*uint64(i))
	}
	if n := len(g); n > 502 {
		t.Fatalf("500 gens 20 apart in %d bytes, want 502 at most", n)
	}
}
