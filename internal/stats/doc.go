// Package stats holds the statistics trawl reports, each computed in one
// place: Wilson, the 95% interval of a measured false-positive rate, used
// by the filter's experiment (dedup.FPCheck, `frontier fpcheck`) and by
// the frontier's audit sample (the status's false-positive skip rate).
//
// # Caveats
//
//   - Pure functions of their arguments; safe for concurrent use.
package stats
