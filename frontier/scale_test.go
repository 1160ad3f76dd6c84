//go:build scale

package frontier

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/trawlhq/trawl/dedup"
)

// The scale benchmark: one shard grown to -scale.urls admitted URLs over
// -scale.hosts hosts with crawl-like batches (80% of a page's links on its
// own host, 80% duplicates, 10,000 links per Apply), behind the `scale`
// build tag so that CI stays fast:
//
//	go test -tags scale ./frontier -run '^$' -bench Scale -benchtime 1x -timeout 3h \
//	    -scale.urls 20000000 -scale.hosts 100000 [-scale.dir /var/tmp]
//
// With -scale.mode scalable the filter is the default chain, and every
// step ends with CheckpointIfDue (its time in compact_s), which starts
// the background fold when the chain advises one (-scale.fold).
//
// Every -scale.step new URLs it compacts the inbox and prints links/s and
// new URLs/s over the step (Compact included), the state file's bytes per
// URL with and without the filter's buckets, the Go heap, the memory the process
// owns apart from the filter (anonymous resident memory, which holds the
// filter and the heap, minus the filter), the file-backed resident
// memory (bbolt's map: the page cache's to evict), and the pages the
// step's commits wrote and the time they spent writing and syncing them,
// Apply's and Compact's, the owned memory's peak over the step
// (sampled every 10 ms), and where the machine's CPU time went over the
// step (its wall time, Compact included, times the cores): the process's
// own CPU seconds, the Go runtime's estimate of its GC's share, the
// kernel's share (sys_s) and the page faults it took (flt_k, thousands:
// a kernel or hypervisor that makes memory slower to touch shows there),
// and as shares of that whole the CPU other processes
// and the kernel used, the time the cores sat idle waiting for I/O, and
// the time the hypervisor gave to other machines (steal). A step that
// is slower with the same cpu_s was kept waiting, not given more work.
// Last, outside the step's time, how long the same fixed work took after
// it (probe_ms: the stateless part of Prepare of 1M links, mprobe_ms:
// 2M filter lookups): a
// step slower with slower probes ran on a slower machine, not on a
// bigger shard; and wait_s, the part of the step Apply spent waiting for
// the stager's next batches (the stager, not Apply, set the pace). After
// the steps it prints how far the last step's new URLs/s fell below the
// first's (reported as drop-%) and how much longer the same fixed work
// took after the last step than after the first. At the
// end it checkpoints the filter (its time and the owned memory's peak
// meanwhile), then measures the lease + outcome cycle at that depth and
// the time to reopen the shard.
//
// It stays in package frontier, not beside the other benchmarks under
// bench/ (a module of its own, which sees only trawl's exported API): it
// opens the shard with test knobs (Options.tune), reads the State's
// filter and host table, and drives Apply with the package's test link
// generator (localGen), none of which is exported.

func BenchmarkScale(b *testing.B) {
	dir := scale.Dir
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("scale-%d.db", os.Getpid()))
	if scale.Keep {
		defer logf("kept %s", path)
	} else {
		defer os.Remove(path)
	}
	cfg := scale.stateConfig()
	open := func() *State {
		s, err := Open(Options{Config: cfg, Path: path, tune: scale.tune})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	s := open()
	filterMem := int64(s.filter.Stats().Bits+7) / 8
	logf("state file %s, filter %d bytes, %d hosts", path, filterMem, scale.Hosts)
	logf("%12s %10s %10s %10s %12s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s %8s %8s %8s %8s %8s %8s %8s %8s %9s %9s %8s", "admitted", "links/s", "new/s", "compact_s", "file_MiB", "B/URL", "B/URL-flt", "heap_MiB", "owned_MiB", "filemap_MiB", "apply_wr_s", "apply_pg", "comp_wr_s", "comp_pg", "peak_MiB", "cpu_s", "gc_s", "sys_s", "flt_k", "wall_s", "others_%", "iowait_%", "steal_%", "probe_ms", "mprobe_ms", "wait_s")
	next, stopGen := stager(s, scale.Hosts)
	defer stopGen()
	logf("probes before the first step: probe_ms %.0f mprobe_ms %.0f", probePrepare(s), probeFilter(s))
	admitted, links := 0, 0
	var first, last stepRate
	profiling := false
	peak := startPeak(filterMem)
	defer peak.stop()
	for admitted < scale.URLs {
		if scale.CPUProfile != "" && !profiling && admitted >= scale.ProfileFrom {
			f, err := os.Create(scale.CPUProfile)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				b.Fatal(err)
			}
			profiling = true
			defer f.Close()
		}
		stopStep := func() {}
		if scale.StepProfiles != "" {
			stopStep = profileTo(b, filepath.Join(scale.StepProfiles, fmt.Sprintf("step-%02d.pprof", admitted/scale.Step+1)))
		}
		wrStart, cpuStart := writeStats(s), readCPU()
		var cwrStart written
		st := growStep(b, s, next, min(scale.Step, scale.URLs-admitted), func(stepNew int) {
			if admitted == 0 {
				inboxBytes(b, s, stepNew)
			}
			cwrStart = writeStats(s)
		})
		stepLinks, stepNew, compact := st.links, st.admitted, st.compact
		applyWrite, compactWrite := cwrStart.Sub(wrStart), writeStats(s).Sub(cwrStart)
		flush(b, s)
		elapsed := st.took()
		stopStep()
		admitted += stepNew
		links += stepLinks
		fileBytes := fileSize(b, path)
		filterBytes := filterAlloc(b, s)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		anon, filemap := residentKiB()
		cpu := readCPU().sub(cpuStart)
		probe, mprobe := probePrepare(s), probeFilter(s)
		last = stepRate{newPerSec: float64(stepNew) / elapsed.Seconds(), probe: probe}
		if first.newPerSec == 0 {
			first = last
		}
		logf("%12d %10.0f %10.0f %10.1f %12.0f %10.0f %10.0f %10.0f %10.0f %10.0f %10.2f %10d %10.2f %10d %10.0f %8.1f %8.1f %8.1f %8.0f %8.1f %8.1f %8.1f %8.1f %9.0f %9.0f %8.2f", admitted,
			float64(stepLinks)/elapsed.Seconds(), float64(stepNew)/elapsed.Seconds(), compact.Seconds(),
			float64(fileBytes)/(1<<20), float64(fileBytes)/float64(admitted), float64(fileBytes-filterBytes)/float64(admitted),
			float64(ms.HeapAlloc)/(1<<20), (float64(anon)*1024-float64(filterMem))/(1<<20), float64(filemap)/1024,
			applyWrite.time.Seconds(), applyWrite.pages, compactWrite.time.Seconds(), compactWrite.pages, peak.take()/(1<<20),
			cpu.self, cpu.gc, cpu.sys, cpu.faults/1000, elapsed.Seconds(), cpu.pct(cpu.others), cpu.pct(cpu.iowait), cpu.pct(cpu.steal), probe, mprobe, st.wait.Seconds())
	}
	drop := 100 * (1 - last.newPerSec/first.newPerSec)
	logf("last step %.0f new/s, first %.0f: %.1f%% below it (target: at most 20%%); the fixed CPU work (probe_ms) took %.2fx as long after the last step as after the first",
		last.newPerSec, first.newPerSec, drop, last.probe/first.probe)
	if profiling {
		pprof.StopCPUProfile()
	}
	runtime.GC()
	if scale.MemProfile != "" {
		writeHeapProfile(b, scale.MemProfile)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	hosts := len(s.hosts)
	logf("live heap after a GC: %.0f MiB for %d known hosts, %.0f B per host", float64(ms.HeapAlloc)/(1<<20), hosts, float64(ms.HeapAlloc)/float64(hosts))
	// The owned memory's peak while the filter is checkpointed (every
	// dirty chunk, copied, and bbolt's pages for them).
	peak.take()
	cpStart := time.Now()
	if _, err := s.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	logf("checkpoint: %.1f s, owned memory at most %.0f MiB while it ran", time.Since(cpStart).Seconds(), peak.take()/(1<<20))
	fileBytes := fileSize(b, path)
	logf("after a checkpoint: file %.0f MiB, %.1f bytes per admitted URL without the filter's buckets", float64(fileBytes)/(1<<20), float64(fileBytes-filterAlloc(b, s))/float64(admitted))
	bucketBytes(b, s)
	cycle := leaseCycle(b, s, scale.Leases)
	logf("lease + outcome at %d queued: %.0f URLs/s", s.Status().Queued, cycle)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	stop := profileTo(b, scale.ReopenProfile)
	start := time.Now()
	s = open()
	reopen := time.Since(start)
	stop()
	logf("reopen: %v", reopen)
	s.Close()
	b.ReportMetric(drop, "drop-%")
	b.ReportMetric(cycle, "leases/s")
	b.ReportMetric(reopen.Seconds(), "reopen-s")
}

// stepRate is a growth step's new URLs/s and the probe_ms after it, for
// the drop from the first step to the last (the target: the last
// 2M at most 20% below the first 2M).
type stepRate struct{ newPerSec, probe float64 }

// stager returns what hands out the next Apply's batches for s (crawl-like
// pages over hosts hosts, 10,000 links), generated and prepared on a
// goroutine of their own while the Apply before runs, as the service's
// ingest prepares a batch while the one before applies (-scale.serial:
// in turn, on the caller's goroutine), and what stops that goroutine.
func stager(s *State, hosts int) (next func() []Prepared, stop func()) {
	g := newScaleGen(hosts)
	gen := func() []Prepared {
		var ps []Prepared
		for _, lb := range g.scaleBatches() {
			ps = append(ps, s.Prepare(lb))
		}
		return ps
	}
	if scale.Serial {
		return gen, func() {}
	}
	staged := make(chan []Prepared, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case staged <- gen():
			case <-done:
				return
			}
		}
	}()
	return func() []Prepared { return <-staged }, func() { close(done) }
}

// newScaleGen is the scale benchmarks' link generator over hosts hosts:
// the same seed, so the same links, in every run.
func newScaleGen(hosts int) *localGen {
	return &localGen{count: make([]int, hosts), rnd: 88172645463325252, noRepeat: scale.NoRepeat}
}

// scaleBatches is one Apply's batches of the scale workload: 100 pages of
// 100 links, 80% of them duplicates and 80% on the page's own host.
func (g *localGen) scaleBatches() []*LinkBatch { return g.batches(100, 100, 0.8, 0.8) }

// stepResult is what growStep did: links received, URLs admitted, and
// the time its Applies and its Compact took.
type stepResult struct {
	links, admitted int
	apply, compact  time.Duration
	wait            time.Duration // of apply, waiting for the stager's next batches
}

func (r stepResult) took() time.Duration { return r.apply + r.compact }

// growStep applies batches from next to s until n more URLs are admitted,
// calls between (untimed; nil for none) with how many, then compacts.
func growStep(b *testing.B, s *State, next func() []Prepared, n int, between func(admitted int)) (r stepResult) {
	start := time.Now()
	for r.admitted < n {
		t := time.Now()
		ps := next()
		r.wait += time.Since(t)
		res, err := s.Apply(ps, nil)
		if err != nil {
			b.Fatal(err)
		}
		r.links += res.Received
		r.admitted += res.Admitted
	}
	r.apply = time.Since(start)
	if between != nil {
		between(r.admitted)
	}
	start = time.Now()
	if _, err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	if s.mode == dedup.ModeScalable {
		// The service's periodic work: a checkpoint when due (without
		// one, a fold's commit would count a journal of the whole run),
		// and a fold in the background when the chain advises one, which
		// then runs beside the next step's Applies.
		if _, _, err := s.CheckpointIfDue(); err != nil {
			b.Fatal(err)
		}
	}
	r.compact = time.Since(start)
	return r
}

// flush commits what s holds open, untimed, as BenchmarkScale does after
// each step.
func flush(b *testing.B, s *State) {
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkScaleWorkload prints, for every -scale.step new URLs of
// BenchmarkScale's workload (the same generator and seed, so the same
// links in every run), the share of links that are duplicates and the
// share of those that repeat a URL linked earlier in the same Apply's
// batches. A repeat finds its filter lines in cache, a first link to an
// old URL misses on all k of them; with few URLs per host (the first
// steps at 100k hosts) a page's duplicate links repeat the same few URLs,
// so the filter test costs less at the start of the crawl whatever the
// shard holds:
//
//	go test -tags scale ./frontier -run '^$' -bench Workload -benchtime 1x \
//	    -scale.urls 20000000 -scale.hosts 100000
func BenchmarkScaleWorkload(b *testing.B) {
	g := newScaleGen(scale.Hosts)
	logf("%12s %8s %10s %12s", "admitted", "dups_%", "repeat_%", "URLs/host")
	admitted, next := 0, scale.Step
	var links, dups, repeats int
	for admitted < scale.URLs {
		seen := map[string]bool{}
		batchLinks := 0
		for _, lb := range g.scaleBatches() {
			for _, l := range lb.Links {
				batchLinks++
				if seen[l.URL] {
					repeats++
				}
				seen[l.URL] = true
			}
		}
		// The generator counts the new links it made (g.added); the
		// rest are duplicates.
		links, dups = links+batchLinks, dups+batchLinks-(g.added-admitted)
		admitted = g.added
		if admitted >= next {
			logf("%12d %8.1f %10.1f %12.0f", admitted, 100*float64(dups)/float64(links), 100*float64(repeats)/float64(dups), float64(admitted)/float64(len(g.count)))
			links, dups, repeats, next = 0, 0, 0, next+scale.Step
		}
	}
}

// BenchmarkScaleSideBySide tells the growth of a step's cost with the
// shard's size from the machine's own drift: it grows a small shard to
// one -scale.step and a big one to -scale.urls (both over -scale.hosts
// hosts, as BenchmarkScale), then takes -scale.rounds steps of each in
// turn, small then big, so that both see the same machine, and prints
// every pair's new URLs/s and the big shard's rate against the small
// one's, and after each pair the time 2M lookups took in each shard's
// filter (mprobe_ms, as BenchmarkScale prints):
//
//	go test -tags scale ./frontier -run '^$' -bench SideBySide -benchtime 1x -timeout 3h \
//	    -scale.urls 20000000 -scale.hosts 100000 -scale.dir /var/tmp [-scale.rounds 6] \
//	    [-scale.stepprofiles DIR]
//
// With -scale.stepprofiles it writes a CPU profile of each of these steps
// (small-01.pprof, big-01.pprof, ...): where the big shard's step spends
// more than the small one's in the same minute.
// It holds two filters of -scale.filter URLs (2.4 GiB at 1e9).
func BenchmarkScaleSideBySide(b *testing.B) {
	dir := scale.Dir
	if dir == "" {
		dir = b.TempDir()
	}
	type shard struct {
		name string
		s    *State
		next func() []Prepared
		size int
		rate []float64
	}
	grow := func(name string, to int) *shard {
		path := filepath.Join(dir, fmt.Sprintf("scale-%s-%d.db", name, os.Getpid()))
		b.Cleanup(func() { os.Remove(path) })
		s, err := Open(Options{Config: scale.stateConfig(), Path: path, tune: scale.tune})
		if err != nil {
			b.Fatal(err)
		}
		next, stop := stager(s, scale.Hosts)
		b.Cleanup(func() { stop(); s.Close() })
		sh := &shard{name: name, s: s, next: next}
		for sh.size < to {
			sh.size += growStep(b, s, next, min(scale.Step, to-sh.size), nil).admitted
			flush(b, s)
		}
		logf("%s shard grown to %d URLs", name, sh.size)
		return sh
	}
	small, big := grow("small", scale.Step), grow("big", scale.URLs)
	logf("%6s %12s %10s %12s %10s %8s %13s %11s", "round", "small_at", "small_new/s", "big_at", "big_new/s", "big/small", "small_mprobe", "big_mprobe")
	var ratios []float64
	for r := 1; r <= scale.Rounds; r++ {
		for _, sh := range []*shard{small, big} {
			stop := func() {}
			if scale.StepProfiles != "" {
				stop = profileTo(b, filepath.Join(scale.StepProfiles, fmt.Sprintf("%s-%02d.pprof", sh.name, r)))
			}
			st := growStep(b, sh.s, sh.next, scale.Step, nil)
			stop()
			sh.size += st.admitted
			flush(b, sh.s)
			sh.rate = append(sh.rate, float64(st.admitted)/st.took().Seconds())
		}
		ratio := big.rate[r-1] / small.rate[r-1]
		ratios = append(ratios, ratio)
		logf("%6d %12d %10.0f %12d %10.0f %8.3f %13.0f %11.0f", r, small.size, small.rate[r-1], big.size, big.rate[r-1], ratio, probeFilter(small.s), probeFilter(big.s))
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	logf("big shard's rate against the small one's: median %.3f, range %.3f-%.3f", median, ratios[0], ratios[len(ratios)-1])
	b.ReportMetric(median, "big/small")
}
