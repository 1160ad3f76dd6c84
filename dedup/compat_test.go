package dedup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// testdata/fixed-v1.db was written by the code before the scalable filter
// (main at 991601d, format 1): a filter for 2,000 keys at 1% with 4 KiB
// chunks, keys "v1:0" .. "v1:999" checkpointed and "v1:1000" .. "v1:1499"
// only journaled. This code opens it as a fixed filter and keeps using it.
func TestFormat1FileStillWorks(t *testing.T) {
	db := openFixture(t, "fixed-v1.db")
	key := func(i int) []byte { return strconv.AppendInt([]byte("v1:"), int64(i), 10) }
	want, _ := Plan(2000, 0.01)
	db.View(func(tx *bolt.Tx) error {
		if m, err := StoredMode(tx); m != ModeFixed || err != nil {
			t.Errorf("StoredMode = %v, %v; want fixed", m, err)
		}
		return nil
	})
	if _, err := loadChainDB(t, db, ChainConfig{Initial: 2000}); !errors.Is(err, ErrMismatch) {
		t.Errorf("LoadChain of a format 1 file: %v, want ErrMismatch", err)
	}
	f, err := load(t, db, want)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1500 {
		if !f.Test(key(i)) {
			t.Fatalf("v1:%d lost", i)
		}
	}
	// It keeps working: more keys, a checkpoint, a reload.
	var fresh []uint64
	for i := 1500; i < 1800; i++ {
		if !f.TestAndAdd(key(i)) {
			fresh = append(fresh, Hash(key(i)))
		}
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := f.AppendJournal(tx, fresh); err != nil {
			return err
		}
		_, err := f.Checkpoint(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	g, err := load(t, db, want)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1800 {
		if !g.Test(key(i)) {
			t.Fatalf("v1:%d lost after a checkpoint by this code", i)
		}
	}
}

// openFixture opens a copy of testdata/name, so that the test may write to
// it.
func openFixture(t *testing.T, name string) *bolt.DB {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	return openDB(t, path)
}
