package dedup

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func openDB(t testing.TB, path string) *bolt.DB {
	t.Helper()
	o := BoltOptions()
	o.NoSync = true // tests: the page cache survives a killed process
	db, err := bolt.Open(path, 0o600, o)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func load(t testing.TB, db *bolt.DB, want Sizing) (*Filter, error) {
	t.Helper()
	var f *Filter
	err := db.View(func(tx *bolt.Tx) error {
		var err error
		f, err = Load(tx, want)
		return err
	})
	if f != nil {
		t.Cleanup(func() { f.Close() })
	}
	return f, err
}

// hasJournal reports whether db holds a journal bucket.
func hasJournal(t testing.TB, db *bolt.DB) (has bool) {
	t.Helper()
	if err := db.View(func(tx *bolt.Tx) error { has = tx.Bucket([]byte(BucketJournal)) != nil; return nil }); err != nil {
		t.Fatal(err)
	}
	return has
}

func TestCheckpointReopen(t *testing.T) {
	const n = 1_000_000
	for _, l := range allLayouts {
		t.Run(l.String(), func(t *testing.T) {
			db := openDB(t, filepath.Join(t.TempDir(), "f.db"))
			f := newTestFilter(t, n, 0.01, l, WithChunkBytes(64<<10))
			hs := make([]uint64, 0, 10_000)
			seen := make([]bool, 10_000)
			admit := func(lo, hi int) []uint64 {
				hs = hs[:0]
				for i := lo; i < hi; i++ {
					hs = append(hs, Hash(userKey(i)))
				}
				f.TestAndAddHashes(hs, seen)
				var fresh []uint64
				for i, h := range hs {
					if !seen[i] {
						fresh = append(fresh, h)
					}
				}
				return fresh
			}
			var sts []CheckpointStats
			for i := 0; i < n; i += 10_000 {
				fresh := admit(i, i+10_000)
				err := db.Update(func(tx *bolt.Tx) error {
					if err := f.AppendJournal(tx, fresh); err != nil {
						return err
					}
					if i%300_000 == 0 {
						st, err := f.Checkpoint(tx)
						sts = append(sts, st)
						return err
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if sts[0].Chunks != f.nchunks || sts[0].Bytes != int64(len(f.words)*8) {
				t.Errorf("first checkpoint after 10k keys wrote %d chunks, %d bytes; want all %d, %d", sts[0].Chunks, sts[0].Bytes, f.nchunks, len(f.words)*8)
			}
			// The last 100k keys are only in the journal.
			g, err := load(t, db, f.Sizing())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g.words, f.words) {
				t.Fatal("reloaded bits differ")
			}
			for i := range n {
				if !g.Test(userKey(i)) {
					t.Fatalf("user:%d lost across reopen", i)
				}
			}
			fs, gs := f.Stats(), g.Stats()
			if fs.SetBits != gs.SetBits || fs.Items != gs.Items {
				t.Errorf("reloaded stats %d bits, %d items; want %d, %d", gs.SetBits, gs.Items, fs.SetBits, fs.Items)
			}
			// A checkpoint of the reloaded filter drops the journal; a third
			// load sees the same bits from chunks alone.
			if err := db.Update(func(tx *bolt.Tx) error { _, err := g.Checkpoint(tx); return err }); err != nil {
				t.Fatal(err)
			}
			if hasJournal(t, db) {
				t.Error("journal survives a checkpoint")
			}
			h, err := load(t, db, f.Sizing())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(h.words, f.words) {
				t.Fatal("bits differ after checkpoint of the reloaded filter")
			}
		})
	}
}

func TestCheckpointRollback(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "f.db"))
	f := newTestFilter(t, 100_000, 0.01, Standard, WithChunkBytes(4096))
	for i := range 1000 {
		f.TestAndAdd(userKey(i))
	}
	errBoom := errors.New("boom")
	err := db.Update(func(tx *bolt.Tx) error {
		if _, err := f.Checkpoint(tx); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatal(err)
	}
	// The rolled-back chunks must be written by the next checkpoint.
	if err := db.Update(func(tx *bolt.Tx) error { _, err := f.Checkpoint(tx); return err }); err != nil {
		t.Fatal(err)
	}
	// One new key dirties at most k chunks; only those are rewritten.
	if f.TestAndAdd([]byte("one more")) {
		t.Fatal("new key reported seen")
	}
	var st CheckpointStats
	if err := db.Update(func(tx *bolt.Tx) (err error) { st, err = f.Checkpoint(tx); return err }); err != nil {
		t.Fatal(err)
	}
	if st.Chunks < 1 || st.Chunks > f.sz.K || st.Chunks >= f.nchunks {
		t.Errorf("checkpoint after one key wrote %d of %d chunks, want 1..%d", st.Chunks, f.nchunks, f.sz.K)
	}
	g, err := load(t, db, f.Sizing())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.words, f.words) {
		t.Fatal("bits lost to a rolled-back checkpoint")
	}
}

func TestLoadErrors(t *testing.T) {
	want, _ := Plan(100_000, 0.01)
	path := filepath.Join(t.TempDir(), "f.db")
	db := openDB(t, path)
	if _, err := load(t, db, want); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty file: %v, want ErrNotFound", err)
	}
	f := newTestFilter(t, 100_000, 0.01, Standard, WithChunkBytes(4096))
	for i := range 5000 {
		f.TestAndAdd(userKey(i))
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := f.AppendJournal(tx, []uint64{1, 2, 3}); err != nil {
			return err
		}
		_, err := f.Checkpoint(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	other := func(n uint64, p float64, l Layout) Sizing { s, _ := PlanLayout(n, p, l); return s }
	mismatches := []Sizing{other(100_000, 0.01, Blocked), other(100_001, 0.01, Standard), other(100_000, 0.02, Standard)}
	k8 := want
	k8.K = 8
	mismatches = append(mismatches, k8)
	for _, w := range mismatches {
		if _, err := load(t, db, w); !errors.Is(err, ErrMismatch) {
			t.Errorf("load as %+v: %v, want ErrMismatch", w, err)
		}
	}
	corruptions := []struct {
		name string
		fn   func(tx *bolt.Tx) error
	}{
		{"missing chunk", func(tx *bolt.Tx) error {
			k, _ := tx.Bucket([]byte(BucketChunks)).Cursor().First()
			return tx.Bucket([]byte(BucketChunks)).Delete(k)
		}},
		{"truncated chunk", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(BucketChunks))
			k, v := b.Cursor().First()
			return b.Put(k, append([]byte(nil), v[:len(v)-1]...))
		}},
		{"flipped chunk bit", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(BucketChunks))
			k, v := b.Cursor().First()
			v = append([]byte(nil), v...)
			v[10] ^= 4
			return b.Put(k, v)
		}},
		{"chunks bucket gone", func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte(BucketChunks)) }},
		{"truncated meta", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(BucketMeta))
			v := b.Get([]byte(MetaKey))
			return b.Put([]byte(MetaKey), append([]byte(nil), v[:len(v)-3]...))
		}},
		{"garbled journal", func(tx *bolt.Tx) error {
			b, _ := tx.CreateBucketIfNotExists([]byte(BucketJournal))
			return b.Put([]byte("12345678"), []byte("0123456789abcdef"))
		}},
		{"journal without meta", func(tx *bolt.Tx) error {
			b, _ := tx.CreateBucketIfNotExists([]byte(BucketJournal))
			if err := b.Put([]byte("12345678"), []byte("0123456789abcdef")); err != nil {
				return err
			}
			return tx.DeleteBucket([]byte(BucketMeta))
		}},
	}
	for _, c := range corruptions {
		t.Run(c.name, func(t *testing.T) {
			// Work on a copy of the good file.
			cp := filepath.Join(t.TempDir(), "c.db")
			if err := db.View(func(tx *bolt.Tx) error { return tx.CopyFile(cp, 0o600) }); err != nil {
				t.Fatal(err)
			}
			cdb := openDB(t, cp)
			if err := cdb.Update(c.fn); err != nil {
				t.Fatal(err)
			}
			if _, err := load(t, cdb, want); !errors.Is(err, ErrCorrupt) {
				t.Errorf("load: %v, want ErrCorrupt", err)
			}
		})
	}
	if _, err := load(t, db, want); err != nil {
		t.Fatalf("the original file no longer loads: %v", err)
	}
}
