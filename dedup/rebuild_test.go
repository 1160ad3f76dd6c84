package dedup

import (
	"errors"
	"iter"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestRebuildReplacesChain(t *testing.T) {
	const n = 50_000
	cfg := ChainConfig{Initial: 2000, FP: 0.01, ChunkBytes: 4096}
	db := openDB(t, filepath.Join(t.TempDir(), "r.db"))
	c := newTestChain(t, cfg)
	journaled := chainAdmit(t, db, c, 0, n/2, true)
	journaled = append(journaled, chainAdmit(t, db, c, n/2, n, false)...) // only in the journal
	hashes := make([]uint64, n)
	for i := range hashes {
		hashes[i] = Hash(userKey(i))
	}
	f, st, err := Rebuild(slices.Values(hashes), n, 0.01, WithChunkBytes(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st.Hashes != n || st.Items > n || st.Items < n*99/100 {
		t.Errorf("rebuild stats %+v", st)
	}
	// A rebuild whose transaction rolls back leaves the chain as it was.
	errBoom := errors.New("boom")
	if err := db.Update(func(tx *bolt.Tx) error {
		if _, err := ReplaceStored(tx, f); err != nil {
			return err
		}
		return errBoom
	}); !errors.Is(err, errBoom) {
		t.Fatal(err)
	}
	old, err := loadChainDB(t, db, cfg)
	if err != nil {
		t.Fatalf("chain after a rolled-back rebuild: %v", err)
	}
	checkHashes(t, old, journaled, "to a rolled-back rebuild")
	if err := db.Update(func(tx *bolt.Tx) error { _, err := ReplaceStored(tx, f); return err }); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error {
		if m, err := StoredMode(tx); m != ModeFixed || err != nil {
			t.Errorf("StoredMode after rebuild = %v, %v; want fixed", m, err)
		}
		return nil
	})
	if _, err := loadChainDB(t, db, cfg); !errors.Is(err, ErrMismatch) {
		t.Errorf("LoadChain after rebuild: %v, want ErrMismatch", err)
	}
	g, err := load(t, db, f.Sizing())
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !g.Test(userKey(i)) {
			t.Fatalf("user:%d missing from the rebuilt filter", i)
		}
	}
	if !slices.Equal(g.words, f.words) {
		t.Error("stored rebuilt filter differs from the one built")
	}
	if c.Stats().Bits <= g.Stats().Bits {
		t.Errorf("rebuilt filter has %d bits, the chain %d: no smaller", g.Stats().Bits, c.Stats().Bits)
	}
}

func TestRebuildErrors(t *testing.T) {
	hashes := make([]uint64, 1000)
	for i := range hashes {
		hashes[i] = Hash(userKey(i))
	}
	if _, _, err := Rebuild(slices.Values(hashes), 500, 0.01); !errors.Is(err, ErrInvalid) {
		t.Errorf("rebuild of 1000 keys at capacity 500: %v, want ErrInvalid", err)
	}
	pass := 0
	changing := iter.Seq[uint64](func(yield func(uint64) bool) {
		pass++
		for i, h := range hashes {
			if pass == 2 && i == 10 {
				h = Hash([]byte("never added"))
			}
			if !yield(h) {
				return
			}
		}
	})
	if _, _, err := Rebuild(changing, 2000, 0.0001); !errors.Is(err, ErrCorrupt) {
		t.Errorf("rebuild from hashes that change between passes: %v, want ErrCorrupt", err)
	}
}
