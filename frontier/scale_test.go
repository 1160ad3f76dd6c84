//go:build scale

package frontier

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
)

// The scale benchmark: one shard grown to -scale.urls admitted URLs over
// -scale.hosts hosts with crawl-like batches (80% of a page's links on its
// own host, 80% duplicates, 10,000 links per Apply), behind the `scale`
// build tag so that CI stays fast:
//
//	go test -tags scale ./frontier -run '^$' -bench Scale -benchtime 1x -timeout 3h \
//	    -scale.urls 20000000 -scale.hosts 100000 [-scale.dir /var/tmp]
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
var scale = defaultScaleConfig()

func init() { scale.register(flag.CommandLine) }

// scaleConfig is what the scale benchmarks run with, one -scale.* flag a
// field; defaultScaleConfig holds the defaults, register the flags.
//
//	flag                  field           default        what it sets
//	-scale.urls           URLs            20,000,000     admitted URLs to grow the shard to
//	-scale.hosts          Hosts           100,000        hosts the URLs spread over
//	-scale.step           Step            2,000,000      new URLs between reports (and Compacts)
//	-scale.dir            Dir             a temp dir     directory for the state file
//	-scale.filter         FilterCapacity  1,000,000,000  the fixed filter's capacity
//	-scale.leases         Leases          200,000        URLs leased and finished to measure the cycle
//	-scale.layout         Layout          (paged)        the filter's layout: paged, standard or blocked
//	-scale.audit          Audit           (1/64)         the audit fraction
//	-scale.fill           Fill            (the code's)   bbolt FillPercent of tails (segmentFill)
//	-scale.sealrun        SealRun         -1 (code's)    sealRunBytes; 0 keeps every host a tail
//	-scale.serial         Serial          false          prepare each Apply's batches in turn with it
//	-scale.norepeat       NoRepeat        false          no duplicate link repeats a URL of its batch
//	-scale.keep           Keep            false          keep the grown state file for BenchmarkReopen
//	-scale.reopen         Reopen          none           the state file BenchmarkReopen and BenchmarkCycle open
//	-scale.reopens        Reopens         3              times BenchmarkReopen opens it
//	-scale.rounds         Rounds          6              BenchmarkScaleSideBySide: steps of each shard
//	-scale.stallbase      StallBase       5s             BenchmarkCheckpointStall: Apply's run before the checkpoint
//	-scale.cpuprofile     CPUProfile      none           CPU profile of the steps from ProfileFrom on
//	-scale.profile-from   ProfileFrom     0              admitted URLs from which CPUProfile profiles
//	-scale.stepprofiles   StepProfiles    none           a CPU profile of every step, into this directory
//	-scale.memprofile     MemProfile      none           heap profile after the steps (after a GC)
//	-scale.reopenprofile  ReopenProfile   none           CPU profile of BenchmarkScale's reopen
//	-scale.cycleprofile   CycleProfile    none           CPU profile of BenchmarkScale's lease + outcome cycle
type scaleConfig struct {
	URLs, Hosts, Step int
	Dir               string
	FilterCapacity    uint64
	Leases            int
	Layout            string
	Audit, Fill       float64
	SealRun           int
	Serial, NoRepeat  bool
	Keep              bool
	Reopen            string
	Reopens, Rounds   int
	StallBase         time.Duration
	CPUProfile        string
	ProfileFrom       int
	StepProfiles      string
	MemProfile        string
	ReopenProfile     string
	CycleProfile      string
}

// defaultScaleConfig is the scale benchmarks' configuration without flags.
func defaultScaleConfig() scaleConfig {
	return scaleConfig{
		URLs:           20_000_000,
		Hosts:          100_000,
		Step:           2_000_000,
		FilterCapacity: 1_000_000_000,
		Leases:         200_000,
		SealRun:        -1,
		Reopens:        3,
		Rounds:         6,
		StallBase:      5 * time.Second,
	}
}

// register defines the -scale.* flags on fs, each defaulting to c's value.
func (c *scaleConfig) register(fs *flag.FlagSet) {
	fs.IntVar(&c.URLs, "scale.urls", c.URLs, "admitted URLs to grow the shard to")
	fs.IntVar(&c.Hosts, "scale.hosts", c.Hosts, "hosts the URLs spread over")
	fs.IntVar(&c.Step, "scale.step", c.Step, "new URLs between reports (and Compacts)")
	fs.StringVar(&c.Dir, "scale.dir", c.Dir, "directory for the state file (default: a temporary one)")
	fs.Uint64Var(&c.FilterCapacity, "scale.filter", c.FilterCapacity, "fixed filter capacity")
	fs.IntVar(&c.Leases, "scale.leases", c.Leases, "URLs leased and finished to measure the cycle")
	fs.StringVar(&c.CPUProfile, "scale.cpuprofile", c.CPUProfile, "write a CPU profile of the growth steps from -scale.profile-from admitted URLs on")
	fs.IntVar(&c.ProfileFrom, "scale.profile-from", c.ProfileFrom, "admitted URLs from which -scale.cpuprofile profiles (to compare a late step with the first)")
	fs.StringVar(&c.Reopen, "scale.reopen", c.Reopen, "state file BenchmarkReopen opens")
	fs.IntVar(&c.Reopens, "scale.reopens", c.Reopens, "times BenchmarkReopen opens it")
	fs.BoolVar(&c.Keep, "scale.keep", c.Keep, "keep the grown state file (in -scale.dir) for BenchmarkReopen")
	fs.StringVar(&c.MemProfile, "scale.memprofile", c.MemProfile, "write a heap profile after the growth steps (after a GC: what stays live)")
	fs.Float64Var(&c.Fill, "scale.fill", c.Fill, "bbolt FillPercent of tails (segmentFill) to grow the shard with; 0 keeps the code's")
	fs.StringVar(&c.ReopenProfile, "scale.reopenprofile", c.ReopenProfile, "write a CPU profile of the reopen at the end of BenchmarkScale")
	fs.StringVar(&c.CycleProfile, "scale.cycleprofile", c.CycleProfile, "write a CPU profile of the lease + outcome cycle at the end of BenchmarkScale")
	fs.Float64Var(&c.Audit, "scale.audit", c.Audit, "audit fraction (the exact sample's share of URLs); 0 keeps the default 1/64")
	fs.StringVar(&c.StepProfiles, "scale.stepprofiles", c.StepProfiles, "write a CPU profile of every growth step into this directory (step-01.pprof, ...), to compare a slow step with the first of the same run")
	fs.IntVar(&c.Rounds, "scale.rounds", c.Rounds, "BenchmarkScaleSideBySide: steps of each shard, in turn")
	fs.BoolVar(&c.Serial, "scale.serial", c.Serial, "generate and prepare each Apply's batches in turn with it, as the service did before its ingest became a pipeline")
	fs.IntVar(&c.SealRun, "scale.sealrun", c.SealRun, "sealRunBytes to grow the shard with (a host's run of new URLs this big is sealed whole); 0 keeps every host a tail; -1 keeps the code's")
	fs.StringVar(&c.Layout, "scale.layout", c.Layout, "the filter's layout (paged, standard or blocked); empty keeps the default (paged)")
	fs.DurationVar(&c.StallBase, "scale.stallbase", c.StallBase, "BenchmarkCheckpointStall: how long Apply runs before the checkpoint, for the rate without one")
	fs.BoolVar(&c.NoRepeat, "scale.norepeat", c.NoRepeat, "draw every duplicate link again until its URL is not linked earlier in its batch (no filter lines warm from a repeat: a workload whose filter test costs the same at every step)")
}

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

// written is what s's commits have written: pages (bbolt nodes, a page
// or a run of them) and the time spent writing and syncing them (bbolt's
// TxStats Write and WriteTime), which the step's columns apply_wr_s,
// apply_pg, comp_wr_s and comp_pg split between Apply and Compact.
type written struct {
	time  time.Duration
	pages int64
}

func writeStats(s *State) written {
	st := s.db.Stats()
	return written{st.TxStats.GetWriteTime(), st.TxStats.GetWrite()}
}

func (w written) Sub(o written) written { return written{w.time - o.time, w.pages - o.pages} }

// profileCPU starts a CPU profile into -scale.cpuprofile, when given, and
// returns what stops it.
func profileCPU(b *testing.B) (stop func()) { return profileTo(b, scale.CPUProfile) }

// profileTo starts a CPU profile into path, when not empty, and returns
// what stops it.
func profileTo(b *testing.B, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// writeHeapProfile writes the heap profile to path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// stateConfig is the configuration the scale benchmarks open the shard with.
func (c scaleConfig) stateConfig() config.Config {
	cfg := config.Default()
	cfg.Frontier.Filter.Mode = "fixed"
	cfg.Frontier.Filter.Capacity = c.FilterCapacity
	cfg.Frontier.MaxLeasesPerReply = 10_000
	cfg.Scope.SeedHostsOnly = false
	cfg.Scope.MaxRepeatedSegments = 0
	cfg.Scope.MaxPagesPerHost = 0
	cfg.Robots.Obey = false
	cfg.Politeness.MinDelay = 0
	cfg.Politeness.DelayFactor = 0
	if c.Audit > 0 {
		cfg.Audit.Fraction = c.Audit
	}
	if c.Layout != "" {
		cfg.Frontier.Filter.Layout = c.Layout
	}
	return cfg
}

// tune is the Options.tune the scale benchmarks open the shard with:
// the knobs that are not configuration.
func (c scaleConfig) tune(k *knobs) {
	if c.Fill > 0 {
		k.segmentFill = c.Fill
	}
	if c.SealRun >= 0 {
		k.sealRunBytes = c.SealRun
	}
}

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

// BenchmarkReopen opens an existing state file (one BenchmarkScale kept
// with -scale.keep) -scale.reopens times and prints each Open's time,
// without growing a shard again:
//
//	go test -tags scale ./frontier -run '^$' -bench Reopen -benchtime 1x \
//	    -scale.reopen FILE [-scale.reopens 3] [-scale.cpuprofile cpu.out]
//
// It opens read-write, as the service does (a read-only Open skips bbolt's
// freelist rebuild), so each Open commits a transaction: run it on a copy
// of the kept file. -scale.cpuprofile profiles all the Opens.
func BenchmarkReopen(b *testing.B) {
	if scale.Reopen == "" {
		b.Skip("-scale.reopen FILE not given")
	}
	defer profileCPU(b)()
	var total time.Duration
	for i := 0; i < scale.Reopens; i++ {
		start := time.Now()
		s, err := Open(Options{Config: scale.stateConfig(), Path: scale.Reopen, tune: scale.tune})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		total += took
		logf("reopen %d: %v (%d hosts)", i+1, took, len(s.hosts))
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(total.Seconds()/float64(scale.Reopens), "reopen-s")
}

// BenchmarkCycle opens an existing state file (one BenchmarkScale kept
// with -scale.keep; run it on a copy: it leases and finishes URLs) and
// measures the lease + outcome cycle on it, as BenchmarkScale does at its
// end, optionally under a CPU profile of the cycle alone:
//
//	go test -tags scale ./frontier -run '^$' -bench Cycle -benchtime 1x \
//	    -scale.reopen FILE [-scale.leases 200000] [-scale.cpuprofile cpu.out]
func BenchmarkCycle(b *testing.B) {
	if scale.Reopen == "" {
		b.Skip("-scale.reopen FILE not given")
	}
	s, err := Open(Options{Config: scale.stateConfig(), Path: scale.Reopen, tune: scale.tune})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	defer profileCPU(b)()
	cycle := leaseCycle(b, s, scale.Leases)
	logf("lease + outcome at %d queued: %.0f URLs/s", s.Status().Queued, cycle)
	b.ReportMetric(cycle, "leases/s")
}

// leaseCycle leases n URLs in replies of up to 10,000 and reports each as
// fetched (200), one Apply per reply, and returns URLs per second.
func leaseCycle(b *testing.B, s *State, n int) float64 {
	// A checkpoint before leaves gigabytes of garbage (its copies of the
	// chunks) and so a heap goal of twice that: without a collection
	// first, whether the cycle runs any GC at all is luck (one that ran
	// none measured 41-51k/s, one that ran two 21-25k/s, same code).
	runtime.GC()
	defer profileTo(b, scale.CycleProfile)()
	start := time.Now()
	done := 0
	for done < n {
		ls, err := s.Lease(10_000)
		if err != nil {
			b.Fatal(err)
		}
		if len(ls) == 0 {
			b.Fatalf("nothing to lease after %d", done)
		}
		os := make([]Outcome, len(ls))
		for i, l := range ls {
			os[i] = Outcome{LeaseID: l.ID, URL: l.URL, Status: 200}
		}
		if _, err := s.Apply(nil, os); err != nil {
			b.Fatal(err)
		}
		done += len(ls)
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	return float64(done) / time.Since(start).Seconds()
}

// inboxBytes logs what the inbox takes per URL admitted since the last
// compaction (n).
func inboxBytes(b *testing.B, s *State, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket(store.BucketInbox).Stats()
		alloc := st.BranchAlloc + st.LeafAlloc
		logf("inbox before the first compaction: %d records for %d URLs, alloc %.1f MiB, %.1f B/URL", st.KeyN, n, float64(alloc)/(1<<20), float64(alloc)/float64(n))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// bucketBytes logs each bucket's keys, pages in use and bytes per key.
func bucketBytes(b *testing.B, s *State) {
	for _, u := range usage(b, s) {
		per := 0.0
		if u.Keys > 0 {
			per = float64(u.Alloc) / float64(u.Keys)
		}
		logf("bucket %-10s keys %12d alloc %8.1f MiB in use %8.1f MiB  %6.1f B/key", u.Name, u.Keys, float64(u.Alloc)/(1<<20), float64(u.InUse)/(1<<20), per)
	}
}

// filterAlloc is the bytes the filter's buckets (dedup's) take in the file.
func filterAlloc(b *testing.B, s *State) int64 {
	filterBuckets := []string{dedup.BucketMeta, dedup.BucketChunks, dedup.BucketChainChunks, dedup.BucketJournal}
	var n int64
	for _, u := range usage(b, s) {
		if slices.Contains(filterBuckets, u.Name) {
			n += u.Alloc
		}
	}
	return n
}

// usage is store.Usage of s's file, as frontier check prints it.
func usage(b *testing.B, s *State) (us []store.BucketUsage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.db.View(func(tx *bolt.Tx) error { us = store.Usage(tx); return nil }); err != nil {
		b.Fatal(err)
	}
	return us
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// residentKiB reads RssAnon and RssFile from /proc/self/status (0 where
// there is no /proc).
func residentKiB() (anon, file int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		for _, want := range []struct {
			key string
			dst *int64
		}{{"RssAnon:", &anon}, {"RssFile:", &file}} {
			if rest, ok := bytes.CutPrefix(line, []byte(want.key)); ok {
				fields := bytes.Fields(rest)
				if len(fields) > 0 {
					*want.dst, _ = strconv.ParseInt(string(fields[0]), 10, 64)
				}
			}
		}
	}
	return anon, file
}

// peakSampler keeps the most memory the process owns apart from the
// filter (anonymous resident memory minus the filter's bytes), sampled
// every 10 ms: the step-end figures miss the heap's peaks between
// collections.
type peakSampler struct {
	mu     sync.Mutex
	most   float64
	done   chan struct{}
	filter int64
}

func startPeak(filter int64) *peakSampler {
	p := &peakSampler{done: make(chan struct{}), filter: filter}
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			anon, _ := residentKiB()
			p.mu.Lock()
			p.most = max(p.most, float64(anon)*1024-float64(p.filter))
			p.mu.Unlock()
			select {
			case <-p.done:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// take returns the peak since the last take, in bytes, and starts anew.
func (p *peakSampler) take() float64 {
	anon, _ := residentKiB()
	p.mu.Lock()
	defer p.mu.Unlock()
	most := max(p.most, float64(anon)*1024-float64(p.filter))
	p.most = 0
	return most
}

func (p *peakSampler) stop() { close(p.done) }

// The probes are the same work, done between the steps (outside their
// time) with nothing else running, to tell a step that did more work from
// one that ran on a slower machine: on this VM the same work's CPU time
// varies by 10-30% from minute to minute.

// probePrepare returns the milliseconds the stateless part of Prepare
// (canonicalizing and hashing, cache-bound; not the audit's lookups,
// which read the shard) took over the same 1M links each time, generated
// 10,000 at a time, untimed: the probe keeps nothing live that the memory
// columns would count.
func probePrepare(s *State) float64 {
	g := &localGen{count: make([]int, 10_000), rnd: 2463534242}
	var took time.Duration
	for range 100 {
		lbs := g.batches(100, 100, 0.8, 0.8)
		start := time.Now()
		for _, lb := range lbs {
			s.scope.prepare(lb)
		}
		took += time.Since(start)
	}
	return float64(took.Microseconds()) / 1000
}

// probeFilter returns the milliseconds 2M lookups of the same pseudo-random
// hashes in the filter took (memory-latency-bound, as Apply's filter test
// is; read-only).
func probeFilter(s *State) float64 {
	g := &localGen{rnd: 2463534242}
	start := time.Now()
	n := 0
	for range 2_000_000 {
		g.intn(1) // steps g.rnd, the next hash
		if s.filter.TestHash(g.rnd) {
			n++
		}
	}
	sink = n
	return float64(time.Since(start).Microseconds()) / 1000
}

var sink int

// cpuTimes is where CPU time went: the process's own (user + system)
// and, from /proc/stat, the machine's busy, iowait and steal time, in
// seconds summed over its cores.
type cpuTimes struct {
	self, busy, iowait, steal, total float64
	gc                               float64 // the Go runtime's estimate of its GC's CPU time
	sys                              float64 // the process's system time (part of self)
	faults                           float64 // the process's page faults, minor and major
	others                           float64 // busy - self, set by sub
}

// readCPU reads the process's rusage and /proc/stat's "cpu" line (zeros
// for what it cannot read).
func readCPU() cpuTimes {
	var c cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		c.sys = time.Duration(ru.Stime.Nano()).Seconds()
		c.faults = float64(ru.Minflt + ru.Majflt)
	}
	gc := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	if metrics.Read(gc); gc[0].Value.Kind() == metrics.KindFloat64 {
		c.gc = gc[0].Value.Float64()
	}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return c
	}
	// user nice system idle iowait irq softirq steal, in USER_HZ (100/s
	// on every Linux this runs on); guest time is counted in user.
	var v [8]float64
	for i := range v {
		n, _ := strconv.ParseFloat(string(fields[i+1]), 64)
		v[i] = n / 100
	}
	c.busy = v[0] + v[1] + v[2] + v[5] + v[6]
	c.iowait, c.steal = v[4], v[7]
	for _, x := range v {
		c.total += x
	}
	return c
}

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	d := cpuTimes{self: c.self - o.self, gc: c.gc - o.gc, sys: c.sys - o.sys, faults: c.faults - o.faults, busy: c.busy - o.busy, iowait: c.iowait - o.iowait, steal: c.steal - o.steal, total: c.total - o.total}
	d.others = max(0, d.busy-d.self)
	return d
}

// pct is x as a share of all the cores' time over the interval.
func (c cpuTimes) pct(x float64) float64 {
	if c.total <= 0 {
		return 0
	}
	return 100 * x / c.total
}

// logf prints a line at once (b.Logf holds lines to the end and truncates).
func logf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// BenchmarkCheckpointStall measures what a checkpoint of a fully dirty
// filter costs the ingest that runs beside it, as the service's
// checkpoint timer runs beside its ingest: it opens a shard with the
// -scale.filter filter, applies the scale workload until every chunk of
// the filter is dirty and for -scale.stallbase more seconds (the rate
// without a checkpoint), then checkpoints in another goroutine while
// Apply goes on, and prints the checkpoint's time and parts, and for the
// Applies before and during it their rate and the longest one (the
// longest an Apply, and every lease request with it, waited), then the
// time of the same checkpoint with no Apply beside it:
//
//	go test -tags scale ./frontier -run '^$' -bench CheckpointStall -benchtime 1x \
//	    [-scale.filter 1000000000] [-scale.dir /var/tmp]
func BenchmarkCheckpointStall(b *testing.B) {
	dir := scale.Dir
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("stall-%d.db", os.Getpid()))
	defer os.Remove(path)
	s, err := Open(Options{Config: scale.stateConfig(), Path: path, tune: scale.tune})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	next, stopGen := stager(s, scale.Hosts)
	defer stopGen()
	chunks := int((s.filter.Stats().Bits/8 + uint64(s.filter.ChunkBytes()) - 1) / uint64(s.filter.ChunkBytes()))
	apply := func(until func() bool) (r applyRun) {
		start := time.Now()
		for !until() {
			t := time.Now()
			res, err := s.Apply(next(), nil)
			if err != nil {
				b.Fatal(err)
			}
			r.longest = max(r.longest, time.Since(t))
			r.links += res.Received
			r.applies++
		}
		r.took = time.Since(start)
		return r
	}
	apply(func() bool { return s.filter.Stats().DirtyChunks >= chunks })
	if _, err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	base := time.Now()
	before := apply(func() bool { return time.Since(base) >= scale.StallBase })
	if _, err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	done := make(chan dedup.CheckpointStats, 1)
	var cpErr error
	cpStart := time.Now()
	var cpTook time.Duration
	go func() {
		st, err := s.Checkpoint()
		cpTook, cpErr = time.Since(cpStart), err
		done <- st
	}()
	var st dedup.CheckpointStats
	during := apply(func() bool {
		select {
		case st = <-done:
			return true
		default:
			return false
		}
	})
	if cpErr != nil {
		b.Fatal(cpErr)
	}
	logf("filter %d chunks of %d bytes, all dirty; checkpoint_part %d bytes", chunks, s.filter.ChunkBytes(), int64(s.cfg.Frontier.CheckpointPart))
	logf("checkpoint: %.2f s, %d chunks, %.0f MiB", cpTook.Seconds(), st.Chunks, float64(st.Bytes)/(1<<20))
	logf("%-22s %8s %10s %12s", "Applies", "count", "links/s", "longest_ms")
	for _, r := range []struct {
		name string
		r    applyRun
	}{{"before the checkpoint", before}, {"during it", during}} {
		logf("%-22s %8d %10.0f %12.1f", r.name, r.r.applies, float64(r.r.links)/r.r.took.Seconds(), float64(r.r.longest.Microseconds())/1000)
	}
	// The same checkpoint with nothing beside it (a graceful stop's).
	apply(func() bool { return s.filter.Stats().DirtyChunks >= chunks })
	if _, err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	idle := time.Now()
	if _, err := s.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	logf("the same checkpoint alone: %.2f s", time.Since(idle).Seconds())
	b.ReportMetric(cpTook.Seconds(), "checkpoint-s")
	b.ReportMetric(float64(during.longest.Microseconds())/1000, "longest-apply-ms")
}

// applyRun is what a run of Applies did: their count, links and time, and
// the longest of them.
type applyRun struct {
	applies, links int
	took, longest  time.Duration
}
