package statetest

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/internal/boltcheck"
)

// WriteState writes b to a new file and returns its path.
func WriteState(t testing.TB, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// FileSum is the SHA-256 of the file at path.
func FileSum(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// EditState returns a copy of state file b changed by fn in a bbolt
// write transaction: committed with a freelist page (as Close leaves a
// file) or without one (as kill -9 does).
func EditState(t testing.TB, b []byte, freelist bool, fn func(tx *bolt.Tx) error) []byte {
	t.Helper()
	path := WriteState(t, b)
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: !freelist})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// View runs fn in a read-only bbolt transaction on the (closed) state
// file at path.
func View(t testing.TB, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(fn); err != nil {
		t.Fatal(err)
	}
}

// KeyCount is how many keys b holds (its Stats count only what is
// committed).
func KeyCount(b *bolt.Bucket) int {
	n := 0
	_ = b.ForEach(func(_, _ []byte) error { n++; return nil })
	return n
}

// PagesOf returns the page size and high water mark of a good state file
// b and the ids of its reachable pages with flags (boltcheck.PageBranch,
// PageLeaf, ...); none is a failure.
func PagesOf(t testing.TB, b []byte, flags uint16) (pageSize, hwm uint64, ids []uint64) {
	t.Helper()
	info, err := boltcheck.Check(bytes.NewReader(b), int64(len(b)), &boltcheck.Options{Page: func(id uint64, f uint16) {
		if f == flags {
			ids = append(ids, id)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		t.Fatalf("no page with flags %#x", flags)
	}
	return info.PageSize, info.Pages, ids
}
