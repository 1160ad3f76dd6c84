package offline

import (
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
)

// RebuildReport says what RebuildFilter read, built and replaced.
type RebuildReport struct {
	Path     string       `json:"path"`
	Before   string       `json:"before"`    // the filter replaced: "fixed" or "scalable"
	OldBytes uint64       `json:"old_bytes"` // its bit arrays
	OldItems uint64       `json:"old_items"`
	Keys     uint64       `json:"keys"` // held keys read: queued, leased, done, audit sample
	Sizing   dedup.Sizing `json:"sizing"`
	Items    uint64       `json:"items"` // distinct keys in the new filter
	Duration string       `json:"duration"`
}

// RebuildFilter replaces the filter of the stopped shard's state file at
// path with one fixed filter for capacity keys at rate fp (the file's
// layout), built exactly from the keys the frontier holds: the canonical
// URLs queued (inbox and queue), leased, and in the audit sample, and the
// hashes of finished ones (done). Bit positions derive only from
// dedup.Hash, so every held key tests seen in the new filter as in the old;
// RebuildFilter checks that for every key before it commits. It cannot
// restore what the frontier never kept: keys that were only ever
// duplicates or false-positive skips are in the old filter but not the
// new one (they were never queued, so nothing is lost but their
// "seen"), and scope rejects were never in the filter.
//
// All of it is one bbolt transaction: a crash or an error before the
// commit leaves the old filter as it was. A file another process holds is
// frontier.ErrInUse within a second.
func RebuildFilter(path string, capacity uint64, fp float64, opts *Options) (*RebuildReport, error) {
	start := time.Now()
	rep := &RebuildReport{Path: path}
	db, _, err := openStopped(path, "rebuild", false)
	if err != nil {
		return rep, err
	}
	defer db.Close()
	err = store.Guard(func() error {
		return db.Update(func(tx *bolt.Tx) error { return rebuildTx(tx, rep, capacity, fp, opts) })
	})
	if err != nil {
		return rep, fmt.Errorf("frontier: rebuild %s: %w", path, err)
	}
	if err := db.Sync(); err != nil {
		return rep, fmt.Errorf("frontier: rebuild %s: %w", path, err)
	}
	rep.Duration = time.Since(start).Round(time.Millisecond).String()
	return rep, nil
}

func rebuildTx(tx *bolt.Tx, rep *RebuildReport, capacity uint64, fp float64, opts *Options) error {
	meta, schema, err := store.ReadSchema(tx)
	if err != nil {
		return err
	}
	if schema.Version != store.SchemaVersion {
		return fmt.Errorf("%w: schema version %d, this code reads %d", store.ErrMismatch, schema.Version, store.SchemaVersion)
	}
	if err := rebuildOld(tx, rep, schema); err != nil {
		return err
	}
	hs, err := heldHashes(tx)
	if err != nil {
		return err
	}
	rep.Keys = uint64(len(hs))
	f, st, err := dedup.Rebuild(slices.Values(hs), capacity, fp, dedup.WithLayout(schema.Sizing.Layout))
	if err != nil {
		return err
	}
	defer f.Close()
	rep.Sizing, rep.Items = st.Sizing, st.Items
	if _, err := dedup.ReplaceStored(tx, f); err != nil {
		return err
	}
	schema.Sizing = f.Sizing()
	if err := meta.Put(store.KeySchema, schema.Encode()); err != nil {
		return err
	}
	return opts.failpoint()
}

// rebuildOld describes the filter being replaced.
func rebuildOld(tx *bolt.Tx, rep *RebuildReport, schema store.SchemaRecord) error {
	var old interface {
		Stats() dedup.Stats
		Close() error
	}
	var err error
	if schema.Sizing.Bits == 0 {
		rep.Before = "scalable"
		var cc dedup.ChainConfig
		if cc, err = dedup.StoredChain(tx); err == nil {
			old, err = dedup.LoadChain(tx, cc)
		}
	} else {
		rep.Before = "fixed"
		old, err = dedup.Load(tx, schema.Sizing)
	}
	if err != nil {
		return fmt.Errorf("%w: load the old filter: %w", store.ErrCorrupt, err)
	}
	fs := old.Stats()
	rep.OldBytes, rep.OldItems = fs.Bits/8, fs.Items
	return old.Close()
}

// heldHashes returns the dedup.Hash of every key the file holds
// (store.ForEachHeldHash).
func heldHashes(tx *bolt.Tx) ([]uint64, error) {
	var hs []uint64
	err := store.ForEachHeldHash(tx, func(b []uint64) error {
		hs = append(hs, b...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hs, nil
}
