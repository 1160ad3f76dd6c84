package dedup

import (
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/internal/testkit/benchdata"
)

// Benchmarks at the real size: a 1e9-capacity filter at 1% (1.12 GiB) and
// URL keys of 60 to 80 bytes. b.N counts keys, so ns/op is ns per key. The
// filters are shared by the benchmarks and pre-filled with 1e7 keys so every
// page of the array is backed by memory (an untouched page would read as the
// kernel's zero page, from cache). Run with
//
//	go test ./dedup -run '^$' -bench . -benchtime 3000000x -count 3

const benchCapacity = 1_000_000_000

var bench struct {
	once     sync.Once
	keys     [][]byte
	keyBytes int64
	filters  map[Layout]*Filter
}

func benchSetup(b *testing.B) {
	bench.once.Do(func() {
		bench.keys = benchdata.URLKeys(1 << 22)
		for _, k := range bench.keys {
			bench.keyBytes += int64(len(k))
		}
		bench.filters = map[Layout]*Filter{}
		for _, l := range allLayouts {
			f, err := New(benchCapacity, 0.01, WithLayout(l))
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(3, 4))
			hs := make([]uint64, 4096)
			seen := make([]bool, 4096)
			for i := 0; i < 10_000_000; i += len(hs) {
				for j := range hs {
					hs[j] = r.Uint64()
				}
				f.TestAndAddHashes(hs, seen)
			}
			bench.filters[l] = f
		}
	})
	b.SetBytes(bench.keyBytes / int64(len(bench.keys)))
}

// benchKey returns the i-th key; past 4M keys the pool repeats.
func benchKey(i int) []byte { return bench.keys[i&(len(bench.keys)-1)] }

// forLayouts runs fn on each layout's filter and reports, next to ns/op,
// the CPU time per key (cpu-ns/key), which other processes on a shared
// machine do not inflate.
func forLayouts(b *testing.B, fn func(b *testing.B, f *Filter)) {
	for _, l := range allLayouts {
		b.Run(l.String(), func(b *testing.B) {
			benchSetup(b)
			b.ResetTimer()
			cpu := cpuNanos()
			fn(b, bench.filters[l])
			b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/key")
		})
	}
}

func BenchmarkTestAndAdd(b *testing.B) {
	forLayouts(b, func(b *testing.B, f *Filter) {
		off := rand.IntN(len(bench.keys))
		for i := 0; b.Loop(); i++ {
			f.TestAndAdd(benchKey(off + i))
		}
	})
}

func BenchmarkTestAndAddBatch(b *testing.B) {
	const batch = 1024
	forLayouts(b, func(b *testing.B, f *Filter) {
		off := rand.IntN(len(bench.keys))
		keys := make([][]byte, batch)
		seen := make([]bool, batch)
		for i := 0; i < b.N; i += batch {
			n := min(batch, b.N-i)
			for j := range n {
				keys[j] = benchKey(off + i + j)
			}
			f.TestAndAddBatch(keys[:n], seen[:n])
		}
	})
}

// BenchmarkTestAndAddHashes is the batch on precomputed hashes, as the
// frontier calls it: the filter's own cost without xxhash.
func BenchmarkTestAndAddHashes(b *testing.B) {
	const batch = 1024
	forLayouts(b, func(b *testing.B, f *Filter) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 5))
		// Hashes are drawn beforehand so the loop times only the filter.
		hs := make([]uint64, min(b.N, 1<<22))
		for j := range hs {
			hs[j] = r.Uint64()
		}
		seen := make([]bool, batch)
		b.ResetTimer()
		for i := 0; i < b.N; i += batch {
			lo := i % len(hs)
			n := min(batch, b.N-i, len(hs)-lo)
			f.TestAndAddHashes(hs[lo:lo+n], seen[:n])
			i -= batch - n
		}
	})
}

func BenchmarkTest(b *testing.B) {
	forLayouts(b, func(b *testing.B, f *Filter) {
		off := rand.IntN(len(bench.keys))
		for i := 0; b.Loop(); i++ {
			f.Test(benchKey(off + i))
		}
	})
}

// BenchmarkTestHashes is Test on precomputed hashes in batches of 1024
// (TestHashes), as the frontier's check verifies its queue: against
// BenchmarkTest, what the groups' prefetch saves a lookup.
func BenchmarkTestHashes(b *testing.B) {
	const batch = 1024
	forLayouts(b, func(b *testing.B, f *Filter) {
		hs := make([]uint64, batch)
		seen := make([]bool, batch)
		off := rand.IntN(len(bench.keys))
		for i := 0; i < b.N; i += batch {
			n := min(batch, b.N-i)
			for j := range n {
				hs[j] = Hash(benchKey(off + i + j))
			}
			f.TestHashes(hs[:n], seen[:n])
		}
	})
}

// BenchmarkCheckpointLoad writes a full standard 1e9 filter (every chunk
// dirty) to a bbolt file and loads it back: one op is one checkpoint plus
// one load, the two reported separately.
func BenchmarkCheckpointLoad(b *testing.B) {
	benchSetup(b)
	f := bench.filters[Standard]
	path := filepath.Join(b.TempDir(), "bench.db")
	b.SetBytes(int64(f.Sizing().Bytes))
	for b.Loop() {
		db, err := bolt.Open(path, 0o600, BoltOptions())
		if err != nil {
			b.Fatal(err)
		}
		for i := range f.dirty {
			f.dirty[i].Store(^uint64(0) >> (64 - min(64, f.nchunks-64*i)))
		}
		var st CheckpointStats
		if err := db.Update(func(tx *bolt.Tx) (err error) { st, err = f.Checkpoint(tx); return err }); err != nil {
			b.Fatal(err)
		}
		db.Close()
		b.ReportMetric(st.Duration.Seconds(), "checkpoint-s")
		start := time.Now()
		db, err = bolt.Open(path, 0o600, BoltOptions())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "open-s")
		var g *Filter
		if err := db.View(func(tx *bolt.Tx) (err error) { g, err = Load(tx, f.Sizing()); return err }); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "open+load-s")
		if g.Stats().SetBits != f.Stats().SetBits {
			b.Fatal("reloaded filter differs")
		}
		g.Close()
		db.Close()
	}
}

// BenchmarkHash is the cost of hashing the benchmark's URL keys, read in
// order from the 4M-key pool.
func BenchmarkHash(b *testing.B) {
	benchSetup(b)
	off := rand.IntN(len(bench.keys))
	var sum uint64
	cpu := cpuNanos()
	for i := 0; b.Loop(); i++ {
		sum += Hash(benchKey(off + i))
	}
	b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/key")
	if sum == 1 {
		b.Log(sum)
	}
}
