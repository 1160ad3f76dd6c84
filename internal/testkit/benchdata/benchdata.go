// Package benchdata makes the inputs trawl's benchmarks share, so that the
// in-package benchmarks and the peer comparisons in bench/ measure the
// same keys.
//
// Caveats: it allocates everything it returns; call it once per benchmark
// binary (sync.Once), not per iteration.
package benchdata

import (
	"fmt"
	"math/rand/v2"
)

// URLKeys returns n distinct URL keys of 60 to 80 bytes, the same for the
// same n, laid out back to back in one arena as they sit in a batch of
// messages.
func URLKeys(n int) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, n)
	arena := make([]byte, 0, n*80)
	const pad = "abcdefghijklmnopqrstuvwxyz0123456789"
	for i := range keys {
		start := len(arena)
		arena = fmt.Appendf(arena, "https://www.host%05d.example.com/articles/%08d/", r.IntN(100000), i)
		want := 60 + r.IntN(21)
		for len(arena)-start < want {
			arena = append(arena, pad[r.IntN(len(pad))])
		}
		keys[i] = arena[start : start+want : start+want]
	}
	return keys
}
