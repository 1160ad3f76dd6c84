package cli

import (
	"os"
	"runtime/debug"
)

// GCPercent is the garbage collector's target the trawl programs run with
// unless GOGC is set. Their Go heap is small (message buffers, parsed pages,
// the frontier's host table) next to the Bloom filter, which lives outside
// it in its own mapping, so at the runtime's default of 100 the collector
// ran often for little: in the 40,000-page local crawl of bench/crawl it
// cost 199-240 CPU-us per page at 100 and 167-174 at 400.
const GCPercent = 400

// MemoryLimit is the soft limit on the Go runtime's memory (heap, stacks,
// runtime structures; not the Bloom filter's mapping nor bbolt's file map)
// the trawl programs run with unless GOMEMLIMIT is set. GCPercent lets the
// heap grow to five times what is live: harmless for a crawler or a small
// frontier, but a frontier's host table at a million hosts is ~380 MB live,
// which GOGC=400 alone would let grow to ~1.7 GB. Near the limit the
// collector runs more often instead.
const MemoryLimit = 1 << 30

// TuneGC sets the collector's target to GCPercent unless the GOGC
// environment variable chose one, and the soft memory limit to MemoryLimit
// unless GOMEMLIMIT did. It returns the previous target (for
// debug.SetGCPercent to restore).
func TuneGC() int {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(MemoryLimit)
	}
	if _, set := os.LookupEnv("GOGC"); set {
		prev := debug.SetGCPercent(-1) // read it back: there is no getter
		debug.SetGCPercent(prev)
		return prev
	}
	return debug.SetGCPercent(GCPercent)
}
