package frontier

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/testkit/benchdata"
)

// benchNoSync (TRAWL_BENCH_NOSYNC=1) turns off fsync in the Apply
// benchmarks, to separate CPU cost from the disk's.
var benchNoSync = os.Getenv("TRAWL_BENCH_NOSYNC") != ""

func benchState(b *testing.B) *State {
	cfg := config.Default()
	cfg.Frontier.Filter.Capacity = benchdata.FilterCapacity()
	cfg.Scope.SeedHostsOnly = false
	cfg.Scope.MaxRepeatedSegments = 0
	s, err := Open(Options{Config: cfg, Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	s.db.NoSync = benchNoSync
	return s
}

// BenchmarkApply measures Apply alone (Prepare runs on the service's
// worker pool): one transaction per iteration of 20 pages x 500 links,
// 80% of them duplicates, the way the service group-commits. New links
// spread evenly over 10,000 hosts: the worst case for the queue's B+tree.
// links=50000 is a bigger group commit (the service's ~1,000 messages).
func BenchmarkApply(b *testing.B) {
	for _, tc := range []struct {
		dup   float64
		pages int
	}{{0.8, 20}, {0, 20}, {0.8, 100}} {
		b.Run(fmt.Sprintf("dups=%.0f%%/links=%d", tc.dup*100, tc.pages*500), func(b *testing.B) {
			g := &benchdata.LinkGen{}
			benchApply(b, func() []*LinkBatch { return coreBatches(g.Batches(tc.pages, 500, tc.dup)) })
		})
	}
}

// benchApply times Apply over the batches next returns, one transaction
// per iteration, plus the final Compact of the inbox, and reports links/s
// and new URLs/s over both, and the compaction rate alone.
func benchApply(b *testing.B, next func() []*LinkBatch) {
	s := benchState(b)
	var links, admitted int
	var elapsed time.Duration
	b.ResetTimer()
	b.StopTimer()
	for range b.N {
		var ps []Prepared
		for _, lb := range next() {
			ps = append(ps, s.Prepare(lb))
		}
		start := time.Now()
		b.StartTimer()
		res, err := s.Apply(ps, nil)
		b.StopTimer()
		elapsed += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		links += res.Received
		admitted += res.Admitted
	}
	// The inbox's compaction into the host queues is deferred work that
	// belongs to these admissions: time it too.
	start := time.Now()
	if _, err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	compact := time.Since(start)
	elapsed += compact
	b.ReportMetric(float64(links)/elapsed.Seconds(), "links/s")
	b.ReportMetric(float64(admitted)/elapsed.Seconds(), "new/s")
	b.ReportMetric(float64(admitted)/compact.Seconds(), "compacted/s")
}

// localGen makes pages the way crawls see them: most links of a page point
// to its own host (navigation, pagination), the rest to other hosts.
type localGen struct {
	count []int // URLs made per host
	added int   // new URLs made, all hosts
	rnd   uint64
	// noRepeat draws every duplicate link again (up to 8 times on its
	// host, then on other hosts) until its URL is not linked already in
	// the same batches call: no duplicate finds its URL's filter lines
	// in cache from earlier in its batch (the scale benchmark's
	// -scale.norepeat).
	noRepeat bool
}

func (g *localGen) intn(n int) int {
	g.rnd ^= g.rnd << 13
	g.rnd ^= g.rnd >> 7
	g.rnd ^= g.rnd << 17
	return int(g.rnd % uint64(n))
}

// batches returns pages of perPage links, dupShare of them repeats, and
// local of them on the page's own host.
func (g *localGen) batches(pages, perPage int, dupShare, local float64) []*LinkBatch {
	if g.count == nil {
		g.count = make([]int, 10_000)
		g.rnd = 88172645463325252
	}
	out := make([]*LinkBatch, pages)
	var buf []byte
	var linked map[[2]int]bool // host, n: for noRepeat
	if g.noRepeat {
		linked = make(map[[2]int]bool, pages*perPage)
	}
	for p := range out {
		own := g.intn(len(g.count))
		buf = append(strconv.AppendInt(append(buf[:0], "https://www.host"...), int64(own), 10), ".example.com/"...)
		lb := &LinkBatch{Source: string(buf), Depth: 1, Links: make([]Link, perPage)}
		for i := range lb.Links {
			host := own
			if float64(g.intn(1000)) >= local*1000 {
				host = g.intn(len(g.count))
			}
			n := g.count[host]
			if float64(g.intn(1000)) < dupShare*1000 && n > 0 {
				n = g.intn(n)
				for try := 0; linked != nil && linked[[2]int{host, n}] && try < 16; try++ {
					if try >= 8 { // its host's URLs are all linked already: another's
						if h := g.intn(len(g.count)); g.count[h] > 0 {
							host = h
						}
					}
					n = g.intn(g.count[host])
				}
			} else {
				g.count[host]++
				g.added++
			}
			if linked != nil {
				linked[[2]int{host, n}] = true
			}
			// https://www.host<host>.example.com/section/<n%97>/article-<n>.html,
			// built without fmt: the generator runs beside Apply in the
			// scale benchmark, and its cost is the harness's, not the
			// frontier's.
			buf = strconv.AppendInt(append(buf[:0], "https://www.host"...), int64(host), 10)
			buf = strconv.AppendInt(append(buf, ".example.com/section/"...), int64(n%97), 10)
			buf = append(strconv.AppendInt(append(buf, "/article-"...), int64(n), 10), ".html"...)
			lb.Links[i] = Link{URL: string(buf), Kind: 1}
		}
		out[p] = lb
	}
	return out
}

// BenchmarkApplyLocal is BenchmarkApply with crawl-like locality: 80% of
// a page's links on its own host, 80% of all links duplicates.
func BenchmarkApplyLocal(b *testing.B) {
	g := &localGen{}
	benchApply(b, func() []*LinkBatch { return g.batches(20, 500, 0.8, 0.8) })
}

// BenchmarkPrepare measures the stateless half, per core.
func BenchmarkPrepare(b *testing.B) {
	s := benchState(b)
	lbs := coreBatches((&benchdata.LinkGen{}).Batches(20, 500, 0.8))
	b.ResetTimer()
	n := 0
	for i := range b.N {
		p := s.Prepare(lbs[i%len(lbs)])
		n += p.Received
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "links/s")
}

// BenchmarkRawBoltPuts is the floor Apply's enqueue is compared with: the
// same queue records (key host+0+seq, URL record) put in bbolt, 2,000 per
// transaction like Apply's new URLs at 80% duplicates, nothing else.
func BenchmarkRawBoltPuts(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("queue")); return err })
	g := &benchdata.LinkGen{}
	seqs := map[string]uint64{}
	now := time.Now()
	b.ResetTimer()
	for range b.N {
		err := db.Update(func(tx *bolt.Tx) error {
			q := tx.Bucket([]byte("queue"))
			for range 2000 {
				u := g.URL(g.Next)
				g.Next++
				host := u[len("https://") : len("https://")+len(fmt.Sprintf("www.host%d.example.com", (g.Next-1)%10_000))]
				rec := store.URLRecord{URL: u, Depth: 1, EnqueuedAt: now}
				if err := q.Put(store.QueueKey(host, seqs[host]), rec.Encode()); err != nil {
					return err
				}
				seqs[host]++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*2000)/b.Elapsed().Seconds(), "new/s")
}

// BenchmarkPlanCompaction measures the read half of Compact (planCompaction,
// which a compaction runs beside its writes): the inbox of 40 Applies of
// crawl-like pages (localGen, ~80k new URLs over 10,000 hosts) planned
// into the hosts' tails, which an earlier Compact of as many filled. It
// only reads, so every iteration plans the same inbox.
func BenchmarkPlanCompaction(b *testing.B) {
	s := benchState(b)
	g := &localGen{}
	fill := func() {
		for range 40 {
			var ps []Prepared
			for _, lb := range g.batches(20, 500, 0.8, 0.8) {
				ps = append(ps, s.Prepare(lb))
			}
			if _, err := s.Apply(ps, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	fill()
	if _, err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	fill()
	s.mu.Lock()
	if err := s.commitLocked(); err != nil {
		b.Fatal(err)
	}
	var inputs []planInput
	urls := 0
	for _, h := range s.hosts {
		if in, ok := inputOf(h, math.MaxUint64); ok {
			inputs = append(inputs, in)
			urls += int(h.rec.NextSeq - max(h.rec.CompactedSeq, h.rec.HeadSeq))
		}
	}
	s.mu.Unlock()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.planCompaction(inputs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(urls*b.N)/b.Elapsed().Seconds(), "urls/s")
	b.ReportMetric(float64(len(inputs)), "hosts")
}

// TestLocalGenURLs holds the generator's links to the URLs it has always
// made (formatted by fmt.Sprintf before the scale benchmark needed it
// cheaper): the workload of every recorded figure.
func TestLocalGenURLs(t *testing.T) {
	g := &localGen{count: make([]int, 1000), rnd: 88172645463325252}
	links := 0
	for range 3 {
		for _, lb := range g.batches(100, 100, 0.8, 0.8) {
			var own int
			if _, err := fmt.Sscanf(lb.Source, "https://www.host%d.example.com/", &own); err != nil || lb.Source != fmt.Sprintf("https://www.host%d.example.com/", own) {
				t.Fatalf("source %q: %v", lb.Source, err)
			}
			for _, l := range lb.Links {
				var host, sec, n int
				if _, err := fmt.Sscanf(l.URL, "https://www.host%d.example.com/section/%d/article-%d.html", &host, &sec, &n); err != nil {
					t.Fatalf("link %q: %v", l.URL, err)
				}
				if want := fmt.Sprintf("https://www.host%d.example.com/section/%d/article-%d.html", host, n%97, n); l.URL != want || host >= 1000 {
					t.Fatalf("link %q, want %q (of 1000 hosts)", l.URL, want)
				}
				links++
			}
		}
	}
	if links != 3*100*100 {
		t.Fatalf("%d links, want 30000", links)
	}
}
