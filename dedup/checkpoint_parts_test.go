package dedup

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// partCheckpointer is a Filter or a Chain, as a caller checkpoints them.
type partCheckpointer interface {
	TestAndAddHashes(hs []uint64, seen []bool)
	TestHash(h uint64) bool
	AppendJournal(tx *bolt.Tx, hs []uint64) error
	Checkpoint(tx *bolt.Tx) (CheckpointStats, error)
	CheckpointChunks(tx *bolt.Tx, maxBytes int64) (bool, CheckpointStats, error)
	Stats() Stats
}

// TestCheckpointChunks writes a checkpoint in parts of three 4 KiB chunks:
// a load after a part (a crash before the last) finds every key, the
// journal still there; a part rolled back is written by a later one; the
// last part drops the journal, and a load from the chunks alone has the
// same bits and items.
func TestCheckpointChunks(t *testing.T) {
	const chunk = 4096
	for _, tc := range []struct {
		name string
		make func(t *testing.T) partCheckpointer
		load func(t *testing.T, db *bolt.DB, orig partCheckpointer) (partCheckpointer, error)
	}{
		{"fixed", func(t *testing.T) partCheckpointer {
			return newTestFilter(t, 100_000, 0.01, Blocked, WithChunkBytes(chunk))
		}, func(t *testing.T, db *bolt.DB, orig partCheckpointer) (partCheckpointer, error) {
			return load(t, db, orig.(*Filter).Sizing())
		}},
		{"scalable", func(t *testing.T) partCheckpointer {
			return newTestChain(t, ChainConfig{Initial: 20_000, FP: 0.01, ChunkBytes: chunk})
		}, func(t *testing.T, db *bolt.DB, _ partCheckpointer) (partCheckpointer, error) {
			return loadChainDB(t, db, ChainConfig{Initial: 20_000, FP: 0.01, ChunkBytes: chunk})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, filepath.Join(t.TempDir(), "f.db"))
			f := tc.make(t)
			var all []uint64
			admit := func(lo, hi int, ckpt bool) {
				fresh := addRange(f, lo, hi, 1000)
				all = append(all, fresh...)
				err := db.Update(func(tx *bolt.Tx) error {
					if err := f.AppendJournal(tx, fresh); err != nil || !ckpt {
						return err
					}
					_, err := f.Checkpoint(tx)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			admit(0, 10_000, true)
			admit(10_000, 40_000, false) // every chunk changed, journaled only
			part := func(fail bool) bool {
				var more bool
				var st CheckpointStats
				errBoom := errors.New("boom")
				err := db.Update(func(tx *bolt.Tx) (err error) {
					if more, st, err = f.CheckpointChunks(tx, 3*chunk); err == nil && fail {
						err = errBoom
					}
					return err
				})
				if fail != errors.Is(err, errBoom) || (!fail && err != nil) {
					t.Fatalf("part: %v", err)
				}
				if st.Chunks < 1 || st.Chunks > 3 || st.Bytes > 3*chunk {
					t.Fatalf("a part of 3 chunks' bytes wrote %d chunks, %d bytes", st.Chunks, st.Bytes)
				}
				return more
			}
			if !part(false) {
				t.Fatal("the first part wrote every changed chunk")
			}
			// A crash here: the chunks written hold bits the meta's
			// item count and the journal also account for.
			if !hasJournal(t, db) {
				t.Fatal("a part that left changed chunks dropped the journal")
			}
			g, err := tc.load(t, db, f)
			if err != nil {
				t.Fatalf("load after one part: %v", err)
			}
			checkHashes(t, g, all, "after one part of a checkpoint")
			if got, want := g.Stats().Items, f.Stats().Items; got < want || got > want+30_000 {
				t.Errorf("items after one part: %d, want %d to %d", got, want, want+30_000)
			}
			part(true) // rolled back: its chunks stay changed
			parts := 1
			for part(false) {
				parts++
			}
			if parts < 3 {
				t.Errorf("%d parts for a checkpoint of every chunk", parts)
			}
			if hasJournal(t, db) {
				t.Error("journal survives the last part")
			}
			var st CheckpointStats
			if err := db.Update(func(tx *bolt.Tx) (err error) { st, err = f.Checkpoint(tx); return err }); err != nil || st.Chunks != 0 {
				t.Fatalf("a checkpoint after the last part wrote %d chunks (%v), want none", st.Chunks, err)
			}
			h, err := tc.load(t, db, f)
			if err != nil {
				t.Fatal(err)
			}
			checkHashes(t, h, all, "from the chunks alone")
			if hs, fs := h.Stats(), f.Stats(); hs.SetBits != fs.SetBits || hs.Items != fs.Items {
				t.Errorf("from the chunks: %d bits, %d items; want %d, %d", hs.SetBits, hs.Items, fs.SetBits, fs.Items)
			}
		})
	}
}
