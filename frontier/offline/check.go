package offline

import (
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/boltcheck"
	"github.com/trawlhq/trawl/internal/config"
)

// maxCheckProblems bounds the problems a CheckReport lists.
const maxCheckProblems = 50

// CheckReport is what Check found in a state file.
type CheckReport struct {
	Path string
	File boltcheck.Info
	// Shard, Shards, Capacity, FP, Layout and Audit are the schema record's.
	Shard, Shards int
	Capacity      uint64
	FP            float64
	Layout        string
	Audit         float64
	CrawlID       string
	// Problems are bbolt's consistency errors (tx.Check), then Open's;
	// at most maxCheckProblems, Truncated when there were more.
	Problems  []string
	Truncated bool
	// Status is the state's counters, when it could be opened.
	Status *frontier.Status
	// Buckets is what each top-level bucket takes in the file, in name
	// order (when bbolt's consistency check passed).
	Buckets []BucketUsage
}

// BucketUsage is one bucket's share of a state file (store.BucketUsage):
// its keys and the bytes of the pages it holds (allocated) and fills (in
// use), from bbolt's Bucket.Stats. Nested buckets count in their
// parent's. A bucket small enough to live inline in its parent's page has
// no pages of its own: Alloc 0, its bytes in InUse.
type BucketUsage = store.BucketUsage

// OK reports whether the file passed every check.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// Check inspects the state file at path without writing to it: its bbolt
// structure (store.CheckFile, before anything maps it), bbolt's own consistency
// check (every page reachable once or free, keys in order), then frontier.Open,
// read-only, with the shard, shard count, filter sizing and audit
// fraction its schema record names: Open runs Verify's checks itself, so
// a file Check finds inconsistent is one a writing Open refuses, for the
// reason Check gives. cfg supplies the rest (scope,
// politeness: they do not change what is checked). A file that cannot be
// read as a state file at all is an error wrapping frontier.ErrCorrupt; what the
// checks find is in Problems.
func Check(path string, cfg config.Config) (*CheckReport, error) {
	r := &CheckReport{Path: path}
	info, err := store.CheckFile(path)
	r.File = info
	if err != nil {
		return r, err
	}
	if info.Size == 0 {
		return r, fmt.Errorf("frontier: %s: no such state file, or an empty one", path)
	}
	var schema store.SchemaRecord
	var chain dedup.ChainConfig
	err = store.Guard(func() error {
		db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
		if err != nil {
			return fmt.Errorf("frontier: open %s: %w", path, err)
		}
		defer db.Close()
		return db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				r.problem("bbolt: %v", err)
			}
			if r.OK() {
				r.Buckets = store.Usage(tx)
			}
			var meta *bolt.Bucket
			meta, schema, err = store.ReadSchema(tx)
			if err == nil && schema.Version == frontier.SchemaVersion {
				err = schema.Validate() // as Open's checkSchema, before the plan is used
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			r.CrawlID = string(meta.Get(store.KeyCrawlID))
			if schema.Sizing.Bits == 0 { // a scalable chain: open it with its own plan
				if chain, err = dedup.StoredChain(tx); err != nil {
					return fmt.Errorf("%w: %s: %w", frontier.ErrCorrupt, path, err)
				}
			}
			return nil
		})
	})
	if err != nil {
		return r, err
	}
	r.Shard, r.Shards, r.Audit = schema.Shard, schema.Shards, schema.Audit
	r.Capacity, r.FP, r.Layout = schema.Sizing.Capacity, schema.Sizing.FP, schema.Sizing.Layout.String()
	if !r.OK() {
		return r, nil // Open would walk the damage bbolt just reported
	}
	cfg.Frontier.Shard, cfg.Frontier.Shards, cfg.Audit.Fraction = r.Shard, r.Shards, r.Audit
	cfg.Frontier.Filter.Capacity, cfg.Frontier.Filter.FP, cfg.Frontier.Filter.Layout = r.Capacity, r.FP, r.Layout
	cfg.Frontier.Filter.Mode = dedup.ModeFixed.String()
	if chain.Initial > 0 {
		f := &cfg.Frontier.Filter
		f.Mode, f.Initial, f.Growth, f.Tightening = dedup.ModeScalable.String(), chain.Initial, chain.Growth, chain.Tightening
	}
	if math.IsNaN(r.FP) || r.Shards < 1 {
		r.problem("schema record: shard %d of %d, fp %g", r.Shard, r.Shards, r.FP)
		return r, nil
	}
	s, err := frontier.Open(frontier.Options{Config: cfg, Path: path, ReadOnly: true})
	if err != nil {
		r.problem("open: %v", err)
		return r, nil
	}
	defer s.Close()
	st := s.Status()
	r.Status = &st
	return r, nil
}

func (r *CheckReport) problem(format string, args ...any) {
	if len(r.Problems) >= maxCheckProblems {
		r.Truncated = true
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}
