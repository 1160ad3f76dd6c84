package dedup

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// HashVersion identifies the scheme that maps a key to bit positions. It is
// stored with the filter; a filter written under another version refuses to
// load, since its bits would mean nothing to this code.
//
// Version 1:
//   - h = xxhash64(key) (seed 0); this is the value Hash returns, the value
//     the journal stores and the *Hash methods take.
//   - h2 = Mix64(h), the SplitMix64 finalizer (a bijection).
//   - Standard: Kirsch-Mitzenmacher double hashing over 64-bit values,
//     g_0 = ⌊h·m/2^64⌋, d = ⌊h2·m/2^64⌋ (1 if 0), g_i = (g_0 + i·d) mod m,
//     i = 0..k-1. Bit g lives in word g/64 at bit g%64.
//   - Blocked: block b = ⌊h·B/2^64⌋ of B 512-bit blocks (words 8b..8b+7);
//     the k in-block positions are successive 9-bit fields of x taken from
//     the low end, starting at x = h2; after 7 fields (63 bits) x becomes
//     Mix64(x + i), i the index of the next position. Positions may repeat.
//   - Paged: the page of 32,768 bits (words 512p..512p+511; the last page
//     runs to m, 32,768 to 65,535 bits, or all of an m below 32,768)
//     holding bit ⌊h·m/2^64⌋; position i at
//     ⌊Mix64(h + (i+1)·0x9e3779b97f4a7c15)·s/2^64⌋ in it, s the page's
//     size, i = 0..k-1. Positions may repeat.
const HashVersion = 1

// Hash returns the 64-bit hash of key the filter works from: xxhash64.
func Hash(key []byte) uint64 { return xxhash.Sum64(key) }

// Mix64 is the splitmix64 finalizer: a bijection of uint64 that spreads
// every input bit over the output. The standard layout derives its probe
// step from Mix64(Hash(key)) (HashVersion 1); the synthetic web uses it
// to draw its graph.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// reduce maps x uniformly onto [0, n) without a division.
func reduce(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}
