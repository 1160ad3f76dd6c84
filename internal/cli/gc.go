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

// TuneGC sets the collector's target to GCPercent unless the GOGC
// environment variable chose one, and returns the previous target (for
// debug.SetGCPercent to restore). A GOMEMLIMIT set in the environment still
// bounds the heap as usual.
func TuneGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		prev := debug.SetGCPercent(-1) // read it back: there is no getter
		debug.SetGCPercent(prev)
		return prev
	}
	return debug.SetGCPercent(GCPercent)
}
