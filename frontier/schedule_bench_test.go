package frontier

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
)

// BenchmarkRevisit builds a continuous crawl's done set (TRAWL_BENCH_DONE
// URLs, default 100,000, over TRAWL_BENCH_HOSTS hosts, default 1,000),
// every URL fetched once with an ETag and a digest, compacts it, then
// revisits all of it (lease, 304) TRAWL_BENCH_CYCLES times and reports
// the file's bytes per done URL for `done` plus the schedule (bbolt's
// in-use bytes of those buckets; the log has each bucket's, in use and
// allocated), the whole file's before and after `frontier compact`, and
// revisits leased + reported per second; the log has Open's walk of the
// schedule too.
//
//	go test -run '^$' -bench BenchmarkRevisit -benchtime 1x ./frontier/
func BenchmarkRevisit(b *testing.B) {
	done, hosts := envInt("TRAWL_BENCH_DONE", 100_000), envInt("TRAWL_BENCH_HOSTS", 1_000)
	for range b.N {
		benchRevisit(b, done, hosts)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func benchRevisit(b *testing.B, done, hosts int) {
	b.StopTimer()
	cfg := config.Default()
	continuousConfig(&cfg)
	cfg.Frontier.Filter.Capacity = uint64(done) * 2
	cfg.Frontier.MaxInflightPerHost = 1 << 20
	cfg.Frontier.MaxLeasesPerReply = 5_000
	cfg.Politeness.DelayFactor = 0
	clk := newClock()
	path := filepath.Join(b.TempDir(), "revisit.db")
	s, err := Open(Options{Config: cfg, Path: path, Now: clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.db.NoSync = benchNoSync
	for i := 0; i < done; i += 10_000 {
		lb := &LinkBatch{}
		for j := i; j < min(done, i+10_000); j++ {
			lb.Links = append(lb.Links, Link{URL: fmt.Sprintf("http://h%05d.example/docs/section-%d/page-%07d.html", j%hosts, j%7, j), Kind: 1})
		}
		if _, err := s.Apply([]Prepared{s.Prepare(lb)}, nil); err != nil {
			b.Fatal(err)
		}
	}
	// The filter's false positives drop a few of the generated URLs as
	// duplicates (scalable filter: ~1e-4 of them): the done set is what
	// was admitted.
	if st := s.Status(); int(st.Queued) != done {
		b.Logf("admitted %d of %d URLs (%d filter false positives)", st.Queued, done, done-int(st.Queued))
		done = int(st.Queued)
	}
	cycle := func(mk func(l Lease) Outcome) int {
		n := 0
		for {
			ls, err := s.Lease(5_000)
			if err != nil {
				b.Fatal(err)
			}
			if len(ls) == 0 {
				return n
			}
			os := make([]Outcome, len(ls))
			for i, l := range ls {
				os[i] = mk(l)
			}
			if _, err := s.Apply(nil, os); err != nil {
				b.Fatal(err)
			}
			// As the service does every second: drops the finished
			// leases from the deadline heap.
			if _, err := s.ExpireLeasesBefore(clk.Now()); err != nil {
				b.Fatal(err)
			}
			// And a checkpoint (with its compaction of the inboxes)
			// every million outcomes, about the default 30 s
			// checkpoint_interval at these rates: the clock is fake, so
			// CheckpointIfDue would never find one due.
			if (n+len(ls))/1_000_000 != n/1_000_000 {
				if _, err := s.Checkpoint(); err != nil {
					b.Fatal(err)
				}
			}
			n += len(ls)
		}
	}
	got := cycle(func(l Lease) Outcome {
		return Outcome{LeaseID: l.ID, URL: l.URL, Status: 200, ContentType: "text/html", ETag: `"` + strconv.FormatUint(l.ID%1e9, 16) + `"`,
			LastModified: clk.Now().Add(-time.Hour), Digest: l.ID * 0x9e3779b97f4a7c15, ArchivedAt: clk.Now()}
	})
	if got != done {
		b.Fatalf("fetched %d, want %d", got, done)
	}
	if _, err := s.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	// Revisit it all (304s) TRAWL_BENCH_CYCLES times (default 1), timed,
	// compacting after each, so the schedule's pages reach their steady
	// state.
	var elapsed time.Duration
	for range envInt("TRAWL_BENCH_CYCLES", 1) {
		clk.Advance(10 * time.Hour)
		b.StartTimer()
		start := time.Now()
		got = cycle(func(l Lease) Outcome { return Outcome{LeaseID: l.ID, URL: l.URL, Status: 304} })
		elapsed += time.Since(start)
		b.StopTimer()
		b.Logf("cycle: %.0f revisits/s", float64(got)/time.Since(start).Seconds())
		if got != done {
			b.Fatalf("revisited %d, want %d", got, done)
		}
		if _, err := s.Checkpoint(); err != nil {
			b.Fatal(err)
		}
	}
	{
		// Open's walk of the schedule (the due blocks), without and with
		// Verify's checks.
		t0 := time.Now()
		s.mu.Lock()
		if err := s.db.View(s.loadScheduleTx); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := s.db.View(s.verifyScheduleTx); err != nil {
			b.Fatal(err)
		}
		s.mu.Unlock()
		b.Logf("schedule walk: %v counting (verify_on_open off), %v checking", t1.Sub(t0), time.Since(t1))
	}
	var inuse int
	err = s.db.View(func(tx *bolt.Tx) error {
		for _, name := range append([][]byte{store.BucketDone}, store.ScheduleBuckets...) {
			st := tx.Bucket(name).Stats()
			inuse += st.BranchInuse + st.LeafInuse
			b.Logf("%s: %d keys, %.1f B/done in use, %.1f B/done allocated", name, st.KeyN,
				float64(st.BranchInuse+st.LeafInuse)/float64(done), float64(st.BranchAlloc+st.LeafAlloc)/float64(done))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.Logf("Go heap in use after the revisits: %.1f MiB (%.1f B per done URL); %d hosts", float64(ms.HeapInuse)/(1<<20), float64(ms.HeapInuse)/float64(done), hosts)
	b.ReportMetric(float64(ms.HeapInuse)/float64(done), "heapB/done")
	b.ReportMetric(float64(inuse)/float64(done), "B/done(done+schedule)")
	b.ReportMetric(float64(fi.Size())/float64(done), "B/done(file)")
	b.ReportMetric(float64(done*envInt("TRAWL_BENCH_CYCLES", 1))/elapsed.Seconds(), "revisits/s")
	// The file as `frontier compact` leaves it (offline.Compact: the same
	// bbolt copy with every page packed), for the file's bytes per done
	// URL without the free pages the drained queue left.
	packed := path + ".compact"
	dst, err := bolt.Open(packed, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := bolt.Compact(dst, s.db, 64<<20); err != nil {
		b.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		b.Fatal(err)
	}
	if fi, err = os.Stat(packed); err != nil {
		b.Fatal(err)
	}
	b.Logf("file %d bytes as `frontier compact` leaves it", fi.Size())
	b.ReportMetric(float64(fi.Size())/float64(done), "B/done(compacted)")
}
