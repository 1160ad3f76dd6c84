package dedup

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The chain at the real size: 1e9 keys reached by growth from 1e6, next to
// the fixed 1e9 filter, both filled to 1e9 keys, in the same run. A chain
// grown key by key to 1e9 would take most of an hour here; instead each
// sub-filter is built at its final fill directly (n0·s^i random keys, the
// last one the rest), which is exactly the state growth leaves, since a
// Bloom filter's bits depend only on the keys it holds. Run with
//
//	go test ./dedup -run '^$' -bench 'Chain1e9' -benchtime 3000000x -timeout 60m
//
// (-bench 'Chain1e9/chain/standard/s=2/r=0.9' picks one; each fills its
// own filter, once per -count, which takes minutes). The folded/ variants
// are the default chain kept folded (Chain.BeginFold whenever FoldAdvised):
// a folded filter for every key but the newest sub-filter's, and the newest.
// -chainbench-keys 100000000 runs it all at 1e8.

const chainBenchKeys = 1_000_000_000

// chainBenchN is the keys BenchmarkChain1e9 fills to: 1e9 unless
// -chainbench-keys says otherwise (1e8 fills in seconds, for a quick
// comparison on a shared machine).
var chainBenchN = flag.Uint64("chainbench-keys", chainBenchKeys, "keys BenchmarkChain1e9 fills its filters to")

// fillRandom adds n random hashes to f from two goroutines.
func fillRandom(f *Filter, n uint64, seed uint64) {
	var wg sync.WaitGroup
	for w := range uint64(2) {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, w))
			hs := make([]uint64, 4096)
			seen := make([]bool, 4096)
			for done := uint64(0); done < n/2+w*(n%2); {
				c := min(uint64(len(hs)), n/2+w*(n%2)-done)
				for j := range c {
					hs[j] = r.Uint64()
				}
				f.TestAndAddHashes(hs[:c], seen[:c])
				done += c
			}
		})
	}
	wg.Wait()
}

// filledChain builds cfg's chain as it stands after n keys.
func filledChain(b *testing.B, cfg ChainConfig, n uint64) *Chain {
	cfg, err := cfg.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	var subs []*Filter
	for i := 0; n > 0; i++ {
		sz, err := cfg.subSizing(i)
		if err != nil {
			b.Fatal(err)
		}
		f, err := newFilter(sz, cfg.ChunkBytes)
		if err != nil {
			b.Fatal(err)
		}
		k := min(n, sz.Capacity)
		fillRandom(f, k, uint64(i)+100)
		n -= k
		subs = append(subs, f)
	}
	return newChainOf(cfg, subs)
}

// filledFoldedChain builds cfg's chain as it stands after n keys when it is
// sized by budget and folded whenever FoldAdvised: one folded filter
// holding the keys of every sub-filter but the newest, and the newest
// (PlanChain's Folded).
func filledFoldedChain(b *testing.B, cfg ChainConfig, n uint64) *Chain {
	cfg.Capacity = n
	p, err := PlanChain(cfg)
	if err != nil {
		b.Fatal(err)
	}
	cfg = p.Config
	cfg.Fold = true
	var subs []*Filter
	left := n
	for i, sz := range p.Folded.Subfilters {
		f, err := newFilter(sz, cfg.ChunkBytes)
		if err != nil {
			b.Fatal(err)
		}
		k := min(left, sz.Capacity)
		if i == 0 && len(p.Folded.Subfilters) == 2 {
			k = 0
			for _, s := range p.Subfilters[:len(p.Subfilters)-1] {
				k += s.Capacity
			}
			f.folded = true
		}
		f.gi = len(p.Subfilters) - len(p.Folded.Subfilters) + i
		fillRandom(f, k, uint64(i)+200)
		left -= k
		subs = append(subs, f)
	}
	return newChainOf(cfg, subs)
}

// benchHashes times batches of 1024 fresh random hashes through add and
// reports the CPU time per key.
func benchHashes(b *testing.B, add func(hs []uint64, seen []bool)) {
	const batch = 1024
	r := rand.New(rand.NewPCG(rand.Uint64(), 9))
	hs := make([]uint64, min(b.N, 1<<22))
	for j := range hs {
		hs[j] = r.Uint64()
	}
	seen := make([]bool, batch)
	b.ResetTimer()
	cpu := cpuNanos()
	for i := 0; i < b.N; i += batch {
		lo := i % len(hs)
		n := min(batch, b.N-i, len(hs)-lo)
		add(hs[lo:lo+n], seen[:n])
		i -= batch - n
	}
	b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/key")
}

// chainBenchCache keeps the last filled filter: the testing package calls
// a sub-benchmark once with b.N = 1 before the timed run, and a fill takes
// minutes. One at a time, since they take gigabytes.
var chainBenchCache struct {
	name string
	f    interface{ Close() error }
}

func cachedFill[F interface{ Close() error }](name string, fill func() F) F {
	if chainBenchCache.name == name {
		return chainBenchCache.f.(F)
	}
	if chainBenchCache.f != nil {
		chainBenchCache.f.Close()
	}
	f := fill()
	chainBenchCache.name, chainBenchCache.f = name, f
	return f
}

func BenchmarkChain1e9(b *testing.B) {
	defer func() {
		if chainBenchCache.f != nil {
			chainBenchCache.f.Close()
			chainBenchCache.name, chainBenchCache.f = "", nil
		}
	}()
	for _, l := range allLayouts {
		// Each sub-benchmark fills its own filter, so -bench can pick one.
		keys := *chainBenchN
		fixedSz, err := PlanLayout(keys, 0.01, l)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("fixed/%v", l), func(b *testing.B) {
			fixed := cachedFill(b.Name(), func() *Filter {
				f, err := New(keys, 0.01, WithLayout(l))
				if err != nil {
					b.Fatal(err)
				}
				fillRandom(f, keys, 1)
				return f
			})
			benchHashes(b, fixed.TestAndAddHashes)
			b.ReportMetric(float64(fixed.sz.Bytes), "bytes")
			b.ReportMetric(1, "mem-ratio")
			b.ReportMetric(fixed.Stats().ImpliedFP, "implied-fp")
		})
		for _, sr := range [][2]float64{{2, 0.9}, {2, 0.8}, {2, 0.5}, {4, 0.8}} {
			cfg := ChainConfig{Initial: 1_000_000, FP: 0.01, Growth: sr[0], Tightening: sr[1], Layout: l}
			b.Run(fmt.Sprintf("chain/%v/s=%g/r=%g", l, sr[0], sr[1]), func(b *testing.B) {
				c := cachedFill(b.Name(), func() *Chain { return filledChain(b, cfg, keys) })
				benchHashes(b, c.TestAndAddHashes)
				reportChain(b, c, fixedSz)
			})
		}
		cfg := ChainConfig{Initial: 1_000_000, FP: 0.01, Layout: l}
		b.Run(fmt.Sprintf("folded/%v/s=2/r=0.9", l), func(b *testing.B) {
			c := cachedFill(b.Name(), func() *Chain { return filledFoldedChain(b, cfg, keys) })
			benchHashes(b, c.TestAndAddHashes)
			reportChain(b, c, fixedSz)
		})
	}
}

// reportChain reports a chain's memory next to the fixed filter's, its
// sub-filters and its implied rate.
func reportChain(b *testing.B, c *Chain, fixedSz Sizing) {
	st := c.Stats()
	var bytes uint64
	for _, s := range st.Subfilters {
		bytes += (s.Bits + 7) / 8
	}
	b.ReportMetric(float64(bytes), "bytes")
	b.ReportMetric(float64(bytes)/float64(fixedSz.Bytes), "mem-ratio")
	b.ReportMetric(float64(len(st.Subfilters)), "subfilters")
	b.ReportMetric(st.ImpliedFP, "implied-fp")
}

// BenchmarkChainGrowthPause grows a chain from 1e6 through six growth
// events (to 127e6 keys) in batches of 1024 fresh hashes, as the frontier's
// ingest would, and reports the longest batch that added a sub-filter or
// came within 100 batches after one (max-growth-pause-ms: the target is
// under 50 ms), the longest batch of all (max-pause-ms, which on a shared
// machine includes the scheduler's), and the same for a fixed filter of
// the same capacity fed the same way (fixed-max-pause-ms), the floor
// without any growth. b.N is ignored: one run is the measurement.
func BenchmarkChainGrowthPause(b *testing.B) {
	const batch = 1024
	const total = 127_000_000
	c, err := NewChain(ChainConfig{Initial: 1_000_000, FP: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	f, err := New(total, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	<-f.populated
	hs := make([]uint64, batch)
	seen := make([]bool, batch)
	run := func(add func(hs []uint64, seen []bool), grew func() bool) (maxAll, maxGrowth time.Duration) {
		r := rand.New(rand.NewPCG(5, 6))
		since := 1 << 30
		for i := 0; i < total; i += batch {
			for j := range hs {
				hs[j] = r.Uint64()
			}
			start := time.Now()
			add(hs, seen)
			d := time.Since(start)
			maxAll = max(maxAll, d)
			if grew() {
				since = 0
			}
			if since++; since <= 100 {
				maxGrowth = max(maxGrowth, d)
			}
		}
		return maxAll, maxGrowth
	}
	b.ResetTimer()
	for b.Loop() {
		subs := 1
		maxAll, maxGrowth := run(c.TestAndAddHashes, func() bool {
			n := len(*c.subs.Load())
			grew := n != subs
			subs = n
			return grew
		})
		fixedAll, _ := run(f.TestAndAddHashes, func() bool { return false })
		b.ReportMetric(float64(maxGrowth)/1e6, "max-growth-pause-ms")
		b.ReportMetric(float64(maxAll)/1e6, "max-pause-ms")
		b.ReportMetric(float64(fixedAll)/1e6, "fixed-max-pause-ms")
		b.ReportMetric(float64(c.Growths()), "growths")
	}
}

// foldBenchKeys is the keys BenchmarkChainFold grows its chain to.
var foldBenchKeys = flag.Uint64("foldbench-keys", 10_000_000, "keys BenchmarkChainFold grows its chain to")

// BenchmarkChainFold grows a default chain to -foldbench-keys keys (1e7:
// 5 sub-filters) and folds it while a goroutine keeps adding fresh keys in
// batches of 1024 (about 500,000 a second), as the frontier's ingest
// would: BeginFold, Add of every
// key's hash, WriteChunks in parts of 16 MiB (frontier.checkpoint_part's
// default) into a bbolt file, Commit. It reports the fold's seconds and
// its ns per key fed, the folded chain's bytes against the chain's before,
// and the longest batch of the concurrent adds (max-add-pause-ms: the
// target is under 50 ms) next to the longest before the fold began
// (base-add-pause-ms, the machine's own). Run with -benchtime 1x.
func BenchmarkChainFold(b *testing.B) {
	n := *foldBenchKeys
	key := func(i uint64) uint64 { return Mix64(i + 1) }
	for range b.N {
		b.StopTimer()
		c, err := NewChain(ChainConfig{})
		if err != nil {
			b.Fatal(err)
		}
		c.syncGrowth = true
		hs := make([]uint64, 1024)
		seen := make([]bool, 1024)
		for i := uint64(0); i < n; i += 1024 {
			m := min(1024, n-i)
			for j := range m {
				hs[j] = key(i + j)
			}
			c.TestAndAddHashes(hs[:m], seen[:m])
		}
		c.syncGrowth = false
		db, err := openBenchDB(b)
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Update(func(tx *bolt.Tx) error {
			if err := c.AppendJournal(tx, hs[:1]); err != nil {
				return err
			}
			_, err := c.Checkpoint(tx)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		before := c.Stats().Bits / 8
		// The ingest beside the fold.
		var maxPause, basePause time.Duration
		var folding atomic.Bool
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			r := rand.New(rand.NewPCG(11, 12))
			hs := make([]uint64, 1024)
			seen := make([]bool, 1024)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for j := range hs {
					hs[j] = r.Uint64()
				}
				start := time.Now()
				c.TestAndAddHashes(hs, seen)
				if d := time.Since(start); folding.Load() {
					maxPause = max(maxPause, d)
				} else {
					basePause = max(basePause, d)
				}
				time.Sleep(2 * time.Millisecond) // about 500,000 keys/s
			}
		})
		time.Sleep(500 * time.Millisecond)
		b.StartTimer()
		folding.Store(true)
		start := time.Now()
		fd, err := c.BeginFold()
		if err != nil {
			b.Fatal(err)
		}
		for i := uint64(0); i < n; i += 1024 {
			m := min(1024, n-i)
			for j := range m {
				hs[j] = key(i + j)
			}
			fd.Add(hs[:m])
		}
		for more := true; more; {
			if err := db.Update(func(tx *bolt.Tx) (err error) { more, err = fd.WriteChunks(tx, 16<<20); return err }); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Update(func(tx *bolt.Tx) error { _, err := fd.Commit(tx); return err }); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		close(stop)
		wg.Wait()
		after := c.Stats().Bits / 8
		b.ReportMetric(took.Seconds(), "fold-s")
		b.ReportMetric(float64(took.Nanoseconds())/float64(n), "fold-ns/key")
		b.ReportMetric(float64(before), "bytes-before")
		b.ReportMetric(float64(after), "bytes-after")
		b.ReportMetric(float64(fd.Stats().Sizing.Bytes), "folded-bytes")
		b.ReportMetric(float64(maxPause)/1e6, "max-add-pause-ms")
		b.ReportMetric(float64(basePause)/1e6, "base-add-pause-ms")
		db.Close()
		c.Close()
	}
}

// openBenchDB opens a bbolt file in the benchmark's temporary directory.
func openBenchDB(b *testing.B) (*bolt.DB, error) {
	return bolt.Open(filepath.Join(b.TempDir(), "fold.db"), 0o600, BoltOptions())
}
