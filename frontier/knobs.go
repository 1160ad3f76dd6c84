package frontier

import "github.com/trawlhq/trawl/frontier/internal/store"

// knobs are the State's tuning values and failpoints that tests and the
// scale benchmark change. Open starts from defaultKnobs (the constants
// of the same names, each documented where it is used) and applies
// Options.tune; every State keeps its own, so tests that change them can
// run in parallel.
type knobs struct {
	compactChunk     int     // inbox URLs one Compact transaction moves
	inboxRecordBytes int     // bound of an inbox record's URLs
	sealRunBytes     int     // a host's run of new URLs this big is sealed whole; 0: never
	segmentFill      float64 // bbolt FillPercent of `tails` when Compact writes it
	parallelPlan     int     // the fewest hosts a compaction plans on two goroutines
	// checkpointYield, when set, runs between the parts of a checkpoint
	// that yields, or of a fold, while the state is free (yieldLocked).
	checkpointYield func()
	// chainChunkBytes, when set, is a scalable filter's checkpoint chunk
	// size (dedup.ChainConfig.ChunkBytes), so that tests store a small
	// chain in many parts.
	chainChunkBytes int
	// foldFeed, when set, runs before each batch of hashes a fold feeds,
	// while the state is free (fold.go).
	foldFeed func()
}

// defaultKnobs is the knobs of a State built by Open without tune.
func defaultKnobs() knobs {
	return knobs{
		compactChunk:     compactChunk,
		inboxRecordBytes: inboxRecordBytes,
		sealRunBytes:     sealRunBytes,
		segmentFill:      store.SegmentFill,
		parallelPlan:     parallelPlan,
	}
}
