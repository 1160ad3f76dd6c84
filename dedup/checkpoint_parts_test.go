package dedup

import (
	"encoding/binary"
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
	BeginCheckpoint(tx *bolt.Tx) error
	Stats() Stats
}

// partCases are the fixed filter and the chain the checkpoint-part tests
// run on, with 4 KiB chunks, and how each loads from a file.
func partCases() []partCase {
	const chunk = 4096
	return []partCase{
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
	}
}

type partCase struct {
	name string
	make func(t *testing.T) partCheckpointer
	load func(t *testing.T, db *bolt.DB, orig partCheckpointer) (partCheckpointer, error)
}

// start opens a file and a filter with 10,000 keys checkpointed and 30,000
// more journaled only (every chunk changed), and returns the keys.
func (tc partCase) start(t *testing.T) (*bolt.DB, partCheckpointer, []uint64) {
	db := openDB(t, filepath.Join(t.TempDir(), "f.db"))
	f := tc.make(t)
	all := admitRange(t, db, f, 0, 10_000, true)
	return db, f, append(all, admitRange(t, db, f, 10_000, 40_000, false)...)
}

// TestCheckpointChunks writes a checkpoint in parts of three 4 KiB chunks:
// a load after a part (a crash before the last) finds every key, the
// journal still there; a part rolled back is written by a later one; the
// last part drops the journal, and a load from the chunks alone has the
// same bits and items.
func TestCheckpointChunks(t *testing.T) {
	const chunk = 4096
	for _, tc := range partCases() {
		t.Run(tc.name, func(t *testing.T) {
			db, f, all := tc.start(t)
			part := func(fail bool) bool { return checkpointPart(t, db, f, 3*chunk, fail) }
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
			if got, want := g.Stats().Items, f.Stats().Items; got != want {
				t.Errorf("items after one part: %d, want %d", got, want)
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

// admitRange adds the keys lo to hi to f and journals those that were new
// in a transaction of their own (checkpointing f in it too with ckpt),
// and returns them.
func admitRange(t *testing.T, db *bolt.DB, f partCheckpointer, lo, hi int, ckpt bool) []uint64 {
	t.Helper()
	fresh := addRange(f, lo, hi, 1000)
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
	return fresh
}

// checkpointPart writes one part of at most budget bytes of chunks in a
// transaction of its own, rolled back with fail, and returns whether
// changed chunks remain.
func checkpointPart(t *testing.T, db *bolt.DB, f partCheckpointer, budget int64, fail bool) bool {
	t.Helper()
	var more bool
	var st CheckpointStats
	errBoom := errors.New("boom")
	err := db.Update(func(tx *bolt.Tx) (err error) {
		if more, st, err = f.CheckpointChunks(tx, budget); err == nil && fail {
			err = errBoom
		}
		return err
	})
	if fail != errors.Is(err, errBoom) || (!fail && err != nil) {
		t.Fatalf("part: %v", err)
	}
	if st.Chunks < 1 || st.Bytes > budget {
		t.Fatalf("a part of %d bytes wrote %d chunks, %d bytes", budget, st.Chunks, st.Bytes)
	}
	return more
}

// TestCheckpointRound writes a checkpoint in parts of three 4 KiB chunks
// while keys are added and journaled between the parts, as the frontier's
// ingest goes on beside its checkpoint: the round ends after the chunks
// changed when it began (though every part finds chunks changed since),
// and its last part keeps the journal records appended after it began
// and drops the earlier ones. A load then (a crash) finds every key, those
// added during the round in chunks written before them included; a part
// rolled back in the middle of the round is written by a later part of
// it, not left to a journal already truncated.
func TestCheckpointRound(t *testing.T) {
	const chunk = 4096
	for _, tc := range partCases() {
		t.Run(tc.name, func(t *testing.T) {
			db, f, all := tc.start(t)
			changed := f.Stats().DirtyChunks
			if err := db.View(f.BeginCheckpoint); err != nil {
				t.Fatal(err)
			}
			cut := journalLast(t, db)
			next, parts, records := 40_000, 0, 0
			for more := true; more; parts++ {
				if parts > changed {
					t.Fatalf("%d parts of at least one chunk for %d chunks changed when the round began: the round chases the chunks changed since", parts, changed)
				}
				more = checkpointPart(t, db, f, 3*chunk, parts == 2)
				// Keys added (and journaled) between the parts, as Apply's.
				all = append(all, admitRange(t, db, f, next, next+2_000, false)...)
				next += 2_000
				records += 2
				// A crash here: every journaled key counts once, whether
				// a part wrote its chunks before or after it was added.
				g, err := tc.load(t, db, f)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := g.Stats().Items, f.Stats().Items; got != want {
					t.Errorf("items loaded after part %d of the round: %d, want %d", parts+1, got, want)
				}
			}
			if want := (changed + 2) / 3; parts < want+1 {
				t.Errorf("%d parts (one rolled back) for %d chunks in parts of 3", parts, changed)
			}
			if f.Stats().DirtyChunks == 0 {
				t.Error("no chunk marked changed after keys were added during the round")
			}
			// What the journal holds: the records appended during the
			// round, none from before it (the adds are batches of 1,000).
			first, n := journalRecords(t, db)
			if first <= cut || n == 0 || n > records {
				t.Errorf("journal after the round: %d records from %d; want up to %d records after %d", n, first, records, cut)
			}
			g, err := tc.load(t, db, f)
			if err != nil {
				t.Fatal(err)
			}
			checkHashes(t, g, all, "loaded after a round with adds between its parts")
			// A checkpoint without a round then writes what is left and
			// drops the journal.
			if err := db.Update(func(tx *bolt.Tx) (err error) { _, err = f.Checkpoint(tx); return err }); err != nil {
				t.Fatal(err)
			}
			if hasJournal(t, db) {
				t.Error("journal survives a whole checkpoint")
			}
			h, err := tc.load(t, db, f)
			if err != nil {
				t.Fatal(err)
			}
			checkHashes(t, h, all, "from the chunks alone after the round and a checkpoint")
		})
	}
}

// journalLast is the sequence of the journal's last record, 0 if none.
func journalLast(t *testing.T, db *bolt.DB) (seq uint64) {
	t.Helper()
	if err := db.View(func(tx *bolt.Tx) error { seq = journalSeq(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	return seq
}

// journalRecords is the sequence of the journal's first record and how
// many it holds.
func journalRecords(t *testing.T, db *bolt.DB) (first uint64, n int) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(BucketJournal))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			if n == 0 {
				first = binary.BigEndian.Uint64(k)
			}
			n++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return first, n
}
