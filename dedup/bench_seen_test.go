package dedup

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSeenHashes looks up keys the filter holds (the setup's first
// 1M hashes), as most of a crawl's links are: read-only (TestHashes) and
// test-and-add (TestAndAddHashes), in batches of 100.
func BenchmarkSeenHashes(b *testing.B) {
	const batch = 100
	for _, m := range []struct {
		name string
		fn   func(f *Filter, hs []uint64, seen []bool)
	}{{"TestHashes", (*Filter).TestHashes}, {"TestAndAddHashes", (*Filter).TestAndAddHashes}} {
		b.Run(m.name, func(b *testing.B) {
			forLayouts(b, func(b *testing.B, f *Filter) {
				r := rand.New(rand.NewPCG(3, 4))
				hs := make([]uint64, 1<<20)
				for j := range hs {
					hs[j] = r.Uint64()
				}
				rand.Shuffle(len(hs), func(i, j int) { hs[i], hs[j] = hs[j], hs[i] })
				seen := make([]bool, batch)
				b.ResetTimer()
				for i := 0; i < b.N; i += batch {
					lo := i % len(hs)
					n := min(batch, b.N-i, len(hs)-lo)
					m.fn(f, hs[lo:lo+n], seen[:n])
					if !seen[0] {
						b.Fatal("a held key reported unseen")
					}
					i -= batch - n
				}
			})
		})
	}
}
