package frontiertest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/internal/statetest"
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
func WriteState(t testing.TB, b []byte) string { t.Helper(); return statetest.WriteState(t, b) }

// FileSum is the SHA-256 of the file at path.
func FileSum(t testing.TB, path string) [32]byte { t.Helper(); return statetest.FileSum(t, path) }

// EditState returns a copy of state file b changed by fn in a bbolt
// write transaction: committed with a freelist page (as Close leaves a
// file) or without one (as kill -9 does).
func EditState(t testing.TB, b []byte, freelist bool, fn func(tx *bolt.Tx) error) []byte {
	t.Helper()
	return statetest.EditState(t, b, freelist, fn)
}

// View runs fn in a read-only bbolt transaction on the (closed) state
// file at path.
func View(t testing.TB, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	statetest.View(t, path, fn)
}

// KeyCount is how many keys b holds (its Stats count only what is
// committed).
func KeyCount(b *bolt.Bucket) int { return statetest.KeyCount(b) }

// PagesOf returns the page size and high water mark of a good state file
// b and the ids of its reachable pages with flags (boltcheck.PageBranch,
// PageLeaf, ...).
func PagesOf(t testing.TB, b []byte, flags uint16) (pageSize, hwm uint64, ids []uint64) {
	t.Helper()
	return statetest.PagesOf(t, b, flags)
}
