package dedup_test

import (
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
)

// A chain kept folded, as a caller that keeps its keys' hashes runs it:
// every key is journaled in the transaction that records it, and when the
// chain advises a fold, the caller feeds every hash it holds, stores the
// folded filter in parts and commits it, each in a transaction of its own.
// ChainConfig.Fold sizes the chain for it (the folded filter at p/2), so
// the chain advises a fold at every growth.
func ExampleChain_BeginFold() {
	dir, _ := os.MkdirTemp("", "fold")
	defer os.RemoveAll(dir)
	db, err := bolt.Open(filepath.Join(dir, "state.db"), 0o600, dedup.BoltOptions())
	if err != nil {
		panic(err)
	}
	defer db.Close()
	c, err := dedup.NewChain(dedup.ChainConfig{Initial: 1000, ChunkBytes: 4096, Fold: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	var held []uint64 // the caller's own record of its keys
	for batch := range 40 {
		hs := make([]uint64, 500)
		for i := range hs {
			hs[i] = dedup.Hash(fmt.Appendf(nil, "https://example.com/%d", batch*500+i))
		}
		seen := make([]bool, len(hs))
		c.TestAndAddHashes(hs, seen)
		var fresh []uint64
		for i, h := range hs {
			if !seen[i] {
				fresh = append(fresh, h)
			}
		}
		held = append(held, fresh...)
		if err := db.Update(func(tx *bolt.Tx) error { return c.AppendJournal(tx, fresh) }); err != nil {
			panic(err)
		}
		if !c.FoldAdvised() {
			continue
		}
		before := len(c.Subfilters())
		fd, err := c.BeginFold()
		if err != nil {
			panic(err)
		}
		fd.Add(held) // every key admitted before BeginFold returned
		for more := true; more; {
			if err := db.Update(func(tx *bolt.Tx) (err error) { more, err = fd.WriteChunks(tx, 16<<20); return err }); err != nil {
				panic(err)
			}
		}
		if err := db.Update(func(tx *bolt.Tx) error { _, err := fd.Commit(tx); return err }); err != nil {
			panic(err)
		}
		fmt.Printf("folded %d sub-filters into %d\n", before, len(c.Subfilters()))
	}
	missing := 0
	for _, h := range held {
		if !c.TestHash(h) {
			missing++
		}
	}
	fmt.Println("missing:", missing)
	// Output:
	// folded 2 sub-filters into 2
	// folded 3 sub-filters into 2
	// folded 3 sub-filters into 2
	// folded 3 sub-filters into 2
	// missing: 0
}
