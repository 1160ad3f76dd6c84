// Package bloom compares trawl's dedup filter with
// github.com/bits-and-blooms/bloom/v3 at the size trawl runs at (1e9 URLs
// at 1%), in the same process and run, and measures the memory limit both
// are bound by: independent random 64-byte reads over an array the size of
// the filter. It has benchmarks only; see docs/benchmarks.md (Dedup) for
// the commands and the figures.
package bloom
