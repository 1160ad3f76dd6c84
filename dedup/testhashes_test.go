package dedup

import (
	"sync"
	"sync/atomic"
	"testing"
)

// batchTester is what TestHashes is tested on: a Filter or a Chain.
type batchTester interface {
	TestAndAddHashes(hs []uint64, seen []bool)
	TestHashes(hs []uint64, seen []bool)
	TestHash(h uint64) bool
	Stats() Stats
}

func batchTesters(t *testing.T) map[string]batchTester {
	return map[string]batchTester{
		"standard": newTestFilter(t, 20_000, 0.01, Standard),
		"blocked":  newTestFilter(t, 20_000, 0.01, Blocked),
		// Grown to several sub-filters by the 20,000 keys below.
		"chain":         newTestChain(t, ChainConfig{Initial: 1000, FP: 0.01}),
		"chain-blocked": newTestChain(t, ChainConfig{Initial: 1000, FP: 0.01, Layout: Blocked}),
	}
}

// TestTestHashes checks the batch lookup against TestHash key by key, over
// a batch that is not a whole number of groups, and that it adds nothing.
func TestTestHashes(t *testing.T) {
	for name, f := range batchTesters(t) {
		t.Run(name, func(t *testing.T) {
			addRange(f, 0, 20_000, 1000)
			// Half added keys, half never added, interleaved.
			var hs []uint64
			for i := range 2001 {
				k := i * 9
				if i%2 == 1 {
					k = 1_000_000 + i
				}
				hs = append(hs, Hash(userKey(k)))
			}
			items := f.Stats().Items
			seen := make([]bool, len(hs))
			for i := range seen {
				seen[i] = i%3 == 0 // stale values must be overwritten
			}
			f.TestHashes(hs, seen)
			var fps int
			for i, h := range hs {
				if seen[i] != f.TestHash(h) {
					t.Fatalf("key %d: TestHashes says %v, TestHash %v", i, seen[i], !seen[i])
				}
				if i%2 == 0 && !seen[i] {
					t.Fatalf("added key %d reported unseen", i)
				}
				if seen[i] && i%2 == 1 {
					fps++
				}
			}
			if fps > 50 { // 1000 absent keys at about 1%
				t.Errorf("%d of 1000 absent keys reported seen", fps)
			}
			// Nothing was added: the same answers again, the same count.
			again := make([]bool, len(hs))
			f.TestHashes(hs, again)
			for i := range hs {
				if again[i] != seen[i] {
					t.Fatalf("key %d: %v, then %v", i, seen[i], again[i])
				}
			}
			if got := f.Stats().Items; got != items {
				t.Errorf("Items went from %d to %d", items, got)
			}
		})
	}
}

// TestTestHashesConcurrent looks up keys while other goroutines add: a key
// added before a lookup began is always reported seen. Run it with -race.
func TestTestHashesConcurrent(t *testing.T) {
	for name, f := range batchTesters(t) {
		t.Run(name, func(t *testing.T) {
			const total, batch = 20_000, 100
			var added atomic.Int64 // keys below this are all in f
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := 0; i < total; i += batch {
					addRange(f, i, i+batch, batch)
					added.Store(int64(i + batch))
				}
			})
			hs := make([]uint64, 256)
			seen := make([]bool, len(hs))
			for n := int(added.Load()); n < total; n = int(added.Load()) {
				for i := range hs {
					hs[i] = Hash(userKey((i * 7919) % max(n, 1)))
				}
				f.TestHashes(hs, seen)
				for i, s := range seen {
					if n > 0 && !s {
						t.Fatalf("key %d of the %d added before the lookup reported unseen", (i*7919)%n, n)
					}
				}
			}
			wg.Wait()
		})
	}
}
