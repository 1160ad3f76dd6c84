//go:build scale

package frontier

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
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
)

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
	filterBuckets := []string{dedup.BucketMeta, dedup.BucketChunks, dedup.BucketChainChunks, dedup.BucketFold, dedup.BucketJournal}
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
