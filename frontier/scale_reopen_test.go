//go:build scale

package frontier

import (
	"runtime"
	"testing"
	"time"
)

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
