package frontiertest

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier"
)

// GoodStateFile returns the bytes of a closed state file holding n
// seeded URLs, 10 a host (http://hI.test/page/N), checkpointed, and the
// options it was written with (Options.Path is the file). A host's 10
// URLs are a run too short to seal, so every host's queue is its record
// in `tails` (n = 3000: 300 records, over a branch page).
func GoodStateFile(t testing.TB, capacity uint64, n int) ([]byte, frontier.Options) {
	t.Helper()
	cfg := Config()
	cfg.Frontier.Filter.Capacity = capacity
	opts := frontier.Options{Config: cfg, Path: filepath.Join(t.TempDir(), "good.db")}
	s, err := frontier.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		lb := &frontier.LinkBatch{}
		for i := range n {
			lb.Links = append(lb.Links, frontier.Link{URL: fmt.Sprintf("http://h%d.test/page/%d", i/10, i), Kind: 1})
		}
		if _, err := s.Apply([]frontier.Prepared{s.Prepare(lb)}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(opts.Path)
	if err != nil {
		t.Fatal(err)
	}
	return b, opts
}

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
