package frontier

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
)

// seenFilter is what the State needs of its URL-seen filter: a fixed
// *dedup.Filter or a scalable *dedup.Chain (frontier.filter.mode).
type seenFilter interface {
	Test(key []byte) bool
	TestHash(h uint64) bool
	TestHashes(hs []uint64, seen []bool)
	TestAndAddHashes(hs []uint64, seen []bool)
	AppendJournal(tx *bolt.Tx, hs []uint64) error
	Checkpoint(tx *bolt.Tx) (dedup.CheckpointStats, error)
	CheckpointChunks(tx *bolt.Tx, maxBytes int64) (more bool, st dedup.CheckpointStats, err error)
	BeginCheckpoint(tx *bolt.Tx) error
	Stats() dedup.Stats
	ChunkBytes() int
	Close() error
}

var (
	_ seenFilter = (*dedup.Filter)(nil)
	_ seenFilter = (*dedup.Chain)(nil)
)

// schemaSizing is the filter part of the schema record: a fixed filter's
// sizing, or for a scalable chain its Capacity, FP and Layout with Bits and
// K zero (the chain's own meta record holds its plan and sub-filters).
func (s *State) schemaSizing() dedup.Sizing {
	if s.mode == dedup.ModeScalable {
		return dedup.Sizing{Capacity: s.chain.Capacity, FP: s.chain.FP, Layout: s.chain.Layout}
	}
	return s.sizing
}

// adoptStoredFilter makes an existing file's filter kind and layout the
// State's: a file keeps the kind and layout it was written with whatever
// frontier.filter.mode and .layout say now (they apply to new crawls;
// `frontier filter rebuild` changes a file's kind). want's sizing follows.
func (s *State) adoptStoredFilter(schema []byte, want *store.SchemaRecord) error {
	if schema == nil {
		return nil // checkSchema reports it
	}
	got, err := store.DecodeSchema(schema)
	if err != nil {
		return err
	}
	if !got.Sizing.Layout.Valid() {
		return fmt.Errorf("%w: schema filter layout %d", ErrCorrupt, got.Sizing.Layout)
	}
	stored := dedup.ModeFixed
	if got.Sizing.Bits == 0 {
		stored = dedup.ModeScalable
	}
	if stored != s.mode {
		s.log.Info("frontier: the state file keeps its filter kind; frontier.filter.mode applies to new crawls",
			"file", s.path, "stored", stored.String(), "configured", s.mode.String())
		s.mode = stored
		if stored == dedup.ModeFixed {
			// Configured scalable: its capacity is a progress target, not
			// a size, so the file's fixed sizing stands (frontier filter
			// rebuild writes such files; so did every crawl before
			// scalable mode).
			s.sizing = got.Sizing
		}
	}
	if l := s.schemaSizing().Layout; l != got.Sizing.Layout {
		s.log.Info("frontier: the state file keeps its filter layout; frontier.filter.layout applies to new crawls",
			"file", s.path, "stored", got.Sizing.Layout.String(), "configured", l.String())
		s.chain.Layout = got.Sizing.Layout
		if s.mode == dedup.ModeFixed {
			// The configured capacity and rate planned with the file's
			// layout: checkSchema still refuses other ones.
			if s.sizing, err = dedup.PlanLayout(s.sizing.Capacity, s.sizing.FP, got.Sizing.Layout); err != nil {
				return fmt.Errorf("frontier: filter sizing: %w", err)
			}
		}
	}
	want.Sizing = s.schemaSizing()
	return nil
}

// newFilter makes the empty filter of a new state file.
func (s *State) newFilter() (seenFilter, error) {
	if s.mode == dedup.ModeScalable {
		return dedup.NewChain(s.chainConfig())
	}
	return dedup.New(s.sizing.Capacity, s.sizing.FP, dedup.WithLayout(s.sizing.Layout))
}

// loadFilter reads the stored filter of the State's kind.
func (s *State) loadFilter(tx *bolt.Tx) (seenFilter, error) {
	if s.mode == dedup.ModeScalable {
		return dedup.LoadChain(tx, s.chainConfig())
	}
	return dedup.Load(tx, s.sizing)
}

// chainConfig is the scalable filter's configuration, with the tests'
// chunk size (knobs.chainChunkBytes).
func (s *State) chainConfig() dedup.ChainConfig {
	cc := s.chain
	if s.knobs.chainChunkBytes > 0 {
		cc.ChunkBytes = s.knobs.chainChunkBytes
	}
	return cc
}

// FilterMode is the kind of filter the state file holds.
func (s *State) FilterMode() dedup.Mode { return s.mode }

// filterStatus is the filter's part of Status.
func filterStatus(mode dedup.Mode, fs dedup.Stats) FilterStatus {
	st := FilterStatus{
		Capacity: fs.Capacity, TargetFP: fs.TargetFP, Items: fs.Items, Fill: fs.Fill,
		ImpliedFP: fs.ImpliedFP, Warning: fs.NearTarget || fs.OverCapacity,
		Mode: mode.String(), Layout: fs.Layout.String(), Bytes: fs.Bits / 8,
		GrowthStopped: fs.GrowthStopped, GrowthError: fs.GrowthError,
	}
	for _, sub := range fs.Subfilters {
		st.Subfilters = append(st.Subfilters, SubfilterStatus{
			Capacity: sub.Capacity, TargetFP: sub.TargetFP, Items: sub.Items,
			Fill: sub.Fill, ImpliedFP: sub.ImpliedFP, Bytes: sub.Bits / 8,
		})
	}
	return st
}

// logGrowthStop warns once when a scalable filter has stopped growing
// (frontier.filter.max_memory, or an error backing the next sub-filter).
func (s *State) logGrowthStop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode != dedup.ModeScalable || s.growthStopLogged || s.filter == nil {
		return
	}
	if fs := s.filter.Stats(); fs.GrowthStopped {
		s.growthStopLogged = true
		s.log.Warn("frontier: the scalable filter stopped growing; its newest sub-filter overfills and the false-positive rate rises past the target (the audit measures it)",
			"max_memory", s.chain.MaxBytes, "bytes", fs.Bits/8, "subfilters", len(fs.Subfilters), "error", fs.GrowthError)
	}
}
