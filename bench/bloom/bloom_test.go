package bloom

import (
	"math/bits"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/internal/testkit/benchdata"
)

// Run with
//
//	cd bench && go test ./bloom -run '^$' -bench . -benchtime 2000000x -count 3
//
// b.N counts keys (or cache lines for MemoryLimit), so ns/op is per key.
// cpu-ns/key is the process's CPU time per key, which other work on a shared
// machine does not inflate the way it inflates wall time.

const (
	capacity = 1_000_000_000
	fpRate   = 0.01
	prefill  = 10_000_000 // keys added before timing, so every page is backed
)

var setup struct {
	once    sync.Once
	keys    [][]byte
	peer    *bloom.BloomFilter
	filters map[dedup.Layout]*dedup.Filter
}

func doSetup(b *testing.B) {
	setup.once.Do(func() {
		setup.keys = benchdata.URLKeys(1 << 22)
		setup.peer = bloom.NewWithEstimates(capacity, fpRate)
		r := rand.New(rand.NewPCG(3, 4))
		var k [8]byte
		for range prefill {
			*(*uint64)(unsafe.Pointer(&k)) = r.Uint64()
			setup.peer.Add(k[:])
		}
		setup.filters = map[dedup.Layout]*dedup.Filter{}
		for _, l := range []dedup.Layout{dedup.Standard, dedup.Paged, dedup.Blocked} {
			f, err := dedup.New(capacity, fpRate, dedup.WithLayout(l))
			if err != nil {
				b.Fatal(err)
			}
			hs := make([]uint64, 4096)
			seen := make([]bool, len(hs))
			for i := 0; i < prefill; i += len(hs) {
				for j := range hs {
					hs[j] = r.Uint64()
				}
				f.TestAndAddHashes(hs, seen)
			}
			setup.filters[l] = f
		}
	})
}

func key(i int) []byte { return setup.keys[i&(len(setup.keys)-1)] }

// cpuNanos is the CPU time the process has used.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// run times fn over b.N keys starting at a random offset in the pool.
func run(b *testing.B, fn func(b *testing.B, off int)) {
	doSetup(b)
	off := rand.IntN(len(setup.keys))
	b.ResetTimer()
	cpu := cpuNanos()
	fn(b, off)
	b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/key")
}

func BenchmarkPeer(b *testing.B) {
	b.Run("bits-and-blooms/Add", func(b *testing.B) {
		run(b, func(b *testing.B, off int) {
			for i := range b.N {
				setup.peer.Add(key(off + i))
			}
		})
	})
	b.Run("bits-and-blooms/TestAndAdd", func(b *testing.B) {
		run(b, func(b *testing.B, off int) {
			for i := range b.N {
				setup.peer.TestAndAdd(key(off + i))
			}
		})
	})
	b.Run("bits-and-blooms/Test", func(b *testing.B) {
		run(b, func(b *testing.B, off int) {
			for i := range b.N {
				setup.peer.Test(key(off + i))
			}
		})
	})
	for _, l := range []dedup.Layout{dedup.Standard, dedup.Paged, dedup.Blocked} {
		name := "trawl-" + l.String()
		b.Run(name+"/TestAndAdd", func(b *testing.B) {
			run(b, func(b *testing.B, off int) {
				f := setup.filters[l]
				for i := range b.N {
					f.TestAndAdd(key(off + i))
				}
			})
		})
		b.Run(name+"/TestAndAddBatch", func(b *testing.B) {
			run(b, func(b *testing.B, off int) {
				f := setup.filters[l]
				const batch = 1024
				keys := make([][]byte, batch)
				seen := make([]bool, batch)
				for i := 0; i < b.N; i += batch {
					n := min(batch, b.N-i)
					for j := range n {
						keys[j] = key(off + i + j)
					}
					f.TestAndAddBatch(keys[:n], seen[:n])
				}
			})
		})
		b.Run(name+"/Test", func(b *testing.B) {
			run(b, func(b *testing.B, off int) {
				f := setup.filters[l]
				for i := range b.N {
					f.Test(key(off + i))
				}
			})
		})
	}
}

const hugePage = 2 << 20

// lineArray maps n bytes, 2 MiB aligned, with or without huge pages, and
// writes every page so none reads as the shared zero page.
func lineArray(b *testing.B, n int, huge bool) ([]uint64, func()) {
	raw, err := syscall.Mmap(-1, 0, n+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	off := (hugePage - int(uintptr(unsafe.Pointer(&raw[0]))%hugePage)) % hugePage
	region := raw[off : off+n]
	advice := syscall.MADV_NOHUGEPAGE
	if huge {
		advice = syscall.MADV_HUGEPAGE
	}
	if err := syscall.Madvise(region, advice); err != nil {
		b.Fatal(err)
	}
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&region[0])), n/8)
	for i := 0; i < len(words); i += 512 {
		words[i] = uint64(i)
	}
	return words, func() { syscall.Munmap(raw) }
}

// BenchmarkMemoryLimit reads random 64-byte lines of an array the size of
// the 1e9 standard filter. Each address comes from a counter-based
// generator, never from a loaded value, so the reads are independent and
// the CPU overlaps as many misses as it can: the bound on any Bloom filter
// of this size. k-lines-ns/key reports 7 lines (a standard key at 1%).
func BenchmarkMemoryLimit(b *testing.B) {
	s, _ := dedup.Plan(capacity, fpRate)
	size := int(s.Bytes+63) &^ 63
	for _, huge := range []bool{true, false} {
		name := "hugepages"
		if !huge {
			name = "4KiB-pages"
		}
		b.Run(name+"-write", func(b *testing.B) {
			// Read-modify-write of one word per random line: the line is
			// dirtied and must be written back when evicted, which an add
			// pays and a lookup does not.
			words, free := lineArray(b, size, huge)
			defer free()
			lines := uint64(len(words) / 8)
			x := rand.Uint64()
			b.ResetTimer()
			cpu := cpuNanos()
			for range b.N {
				x += 0x9e3779b97f4a7c15
				hi, _ := bits.Mul64(x^(x>>29)*0xbf58476d1ce4e5b9, lines)
				words[hi*8] |= x
			}
			cpuPer := float64(cpuNanos()-cpu) / float64(b.N)
			b.ReportMetric(cpuPer, "cpu-ns/line")
			b.ReportMetric(7*cpuPer, "cpu-ns/7lines")
		})
		b.Run(name, func(b *testing.B) {
			words, free := lineArray(b, size, huge)
			defer free()
			lines := uint64(len(words) / 8)
			x := rand.Uint64()
			var sum uint64
			b.ResetTimer()
			cpu := cpuNanos()
			for range b.N {
				x += 0x9e3779b97f4a7c15
				hi, _ := bits.Mul64(x^(x>>29)*0xbf58476d1ce4e5b9, lines)
				sum += words[hi*8]
			}
			cpuPer := float64(cpuNanos()-cpu) / float64(b.N)
			b.ReportMetric(cpuPer, "cpu-ns/line")
			b.ReportMetric(7*cpuPer, "cpu-ns/7lines")
			if sum == 42 {
				b.Log(sum)
			}
		})
	}
}
