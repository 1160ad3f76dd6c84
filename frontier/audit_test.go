package frontier

import (
	"fmt"
	"math"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier/internal/store"
	"github.com/trawlhq/trawl/internal/config"
)

func TestAuditStatusMath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                     string
		sampledNew, fp, filtNew  uint64
		fraction                 float64
		rate, low, high, project float64
	}{
		// Hand-computed Wilson 95% intervals, z = 1.96:
		// 5/100: centre (0.05+z²/200)/(1+z²/100) = 0.066648,
		// half z/(1+z²/100)·sqrt(0.05·0.95/100 + z²/40000) = 0.045105.
		{"5 of 100", 95, 5, 1000, 1.0 / 64, 0.05, 0.021544, 0.111752, 0.05 * (1000 + 5*64)},
		// 0/10: low 0, high z²/(10+z²) = 0.277533.
		{"0 of 10", 10, 0, 10, 1, 0, 0, 0.277533, 0},
		// 1/1: low 1/(1+z²) = 0.206543, high 1.
		{"1 of 1", 0, 1, 0, 1, 1, 0.206543, 1, 1},
		{"empty", 0, 0, 0, 0.5, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c counters
			c[cSampledNew], c[cFPSkips], c[cFilterNew] = tc.sampledNew, tc.fp, tc.filtNew
			a := auditStatus(&c, tc.fraction, 0.01)
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"rate", a.Rate, tc.rate}, {"low", a.Low, tc.low}, {"high", a.High, tc.high}, {"projected", a.Projected, tc.project}} {
				if math.Abs(f.got-f.want) > 1e-5 {
					t.Errorf("%s = %.6f, want %.6f", f.name, f.got, f.want)
				}
			}
			if a.SampledNew != tc.sampledNew || a.FPSkips != tc.fp || a.ImpliedFP != 0.01 || a.Fraction != tc.fraction {
				t.Errorf("fields %+v", a)
			}
		})
	}
}

// TestAuditExactWithUndersizedFilter overfills a 1,000-key filter with
// 20,000 distinct keys (and repeats) at audit fraction 1.0: the sample is
// then the whole key space, so the audit's false-positive skips must equal
// exactly the new keys the filter called seen, computed here with a Go map
// and a second filter of the same sizing fed the same keys.
func TestAuditExactWithUndersizedFilter(t *testing.T) {
	t.Parallel()
	for _, rescue := range []bool{false, true} {
		t.Run(fmt.Sprintf("rescue=%v", rescue), func(t *testing.T) {
			h := newHarness(t, func(c *config.Config) {
				c.Frontier.Filter.Capacity = 1000
				c.Audit.Fraction = 1
				c.Audit.Rescue = rescue
				c.Scope.MaxLinksPerPage = 0
				c.Scope.SeedHostsOnly = false
			})
			ref, err := dedup.New(1000, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			truth := map[string]bool{}
			var wantFP, wantDups, total int
			var batch []string
			flush := func() {
				h.apply([]*LinkBatch{links("http://src.example/", 0, batch...)})
				batch = batch[:0]
			}
			for i := range 24_000 {
				// Every sixth link repeats an earlier one.
				n := i
				if i%6 == 5 {
					n = i / 3
				}
				u := fmt.Sprintf("http://h%d.example/p/%d", n%97, n)
				key := []byte(u)
				seen := ref.TestAndAdd(key)
				switch {
				case truth[u]:
					wantDups++
				case seen:
					wantFP++
				}
				truth[u] = true
				total++
				batch = append(batch, u)
				if len(batch) == 500 {
					flush()
				}
			}
			flush()
			st := h.s.Status()
			a := st.Audit
			distinct := uint64(len(truth))
			if a.FPSkips != uint64(wantFP) {
				t.Errorf("FPSkips = %d, want %d (from the reference filter)", a.FPSkips, wantFP)
			}
			if a.SampledNew+a.FPSkips != distinct {
				t.Errorf("SampledNew %d + FPSkips %d != distinct keys %d", a.SampledNew, a.FPSkips, distinct)
			}
			if st.Duplicates != uint64(wantDups) {
				t.Errorf("Duplicates = %d, want %d", st.Duplicates, wantDups)
			}
			if math.Abs(a.Projected-float64(wantFP)) > 1e-6 {
				t.Errorf("Projected = %f, want exactly %d", a.Projected, wantFP)
			}
			wantAdmitted := distinct - a.FPSkips
			if rescue {
				wantAdmitted = distinct
				if a.Rescued != a.FPSkips {
					t.Errorf("Rescued %d, want %d", a.Rescued, a.FPSkips)
				}
			}
			if st.Admitted != wantAdmitted || uint64(st.Queued) != wantAdmitted {
				t.Errorf("admitted %d queued %d, want %d", st.Admitted, st.Queued, wantAdmitted)
			}
			if wantFP < 1000 || !st.Filter.Warning {
				t.Errorf("overfilled filter: %d FP skips, warning %v; want many and a warning", wantFP, st.Filter.Warning)
			}
			if a.Low > a.Rate || a.High < a.Rate {
				t.Errorf("interval [%f, %f] misses rate %f", a.Low, a.High, a.Rate)
			}
			// Replaying everything changes nothing: each key is counted once.
			before := st.Audit
			for i := 0; i < 2000; i++ {
				batch = append(batch, fmt.Sprintf("http://h%d.example/p/%d", i%97, i))
			}
			flush()
			if after := h.s.Status().Audit; after.FPSkips != before.FPSkips || after.SampledNew != before.SampledNew {
				t.Errorf("replay changed the audit: %+v -> %+v", before, after)
			}
		})
	}
}

func TestAuditSampleFraction(t *testing.T) {
	t.Parallel()
	cut, all := auditThreshold(1.0 / 64)
	if all {
		t.Fatal("1/64 samples all")
	}
	n, sampled := 200_000, 0
	for i := range n {
		if auditHash(fmt.Sprintf("http://h%d.example/%d", i%1000, i)) < cut {
			sampled++
		}
	}
	want := float64(n) / 64
	if math.Abs(float64(sampled)-want) > 5*math.Sqrt(want) {
		t.Errorf("sampled %d of %d, want about %.0f", sampled, n, want)
	}
	// Independence from the filter's hash: among sampled keys, dedup.Hash
	// must still spread evenly (its top bit set about half the time).
	top := 0
	for i := range n {
		k := fmt.Sprintf("http://h%d.example/%d", i%1000, i)
		if auditHash(k) < cut && dedup.Hash([]byte(k))>>63 == 1 {
			top++
		}
	}
	if math.Abs(float64(top)-float64(sampled)/2) > 5*math.Sqrt(float64(sampled)/4) {
		t.Errorf("dedup.Hash top bit set for %d of %d sampled keys", top, sampled)
	}
	for _, tc := range []struct {
		f    float64
		all  bool
		zero bool
	}{{1, true, true}, {2, true, true}, {0, false, true}, {-1, false, true}, {math.NaN(), false, true}} {
		c, a := auditThreshold(tc.f)
		if a != tc.all || (c == 0) != tc.zero {
			t.Errorf("auditThreshold(%v) = %d, %v", tc.f, c, a)
		}
	}
}

// The sample's new keys wait in memory until Compact writes them to
// truth, in key order, instead of a random page of truth per key in every
// Apply; a lease from the inbox writes its URL's key; and a crash loses
// none: Open finds the keys of the URLs still in the inbox. A key waiting
// counts as in the sample throughout: seen again, it is a duplicate, not
// a false-positive skip, and explain says it is in the sample.
func TestAuditKeysPendingUntilCompact(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Audit.Fraction = 1
	})
	urls := hostURLs(50, 2)
	truthKeys := func() int {
		n := 0
		if err := h.s.db.View(func(tx *bolt.Tx) error { n = keyCount(tx.Bucket(store.BucketTruth)); return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	again := func(when string) {
		t.Helper()
		res := h.seed(urls...)
		if res.Admitted != 0 || res.FPSkips != 0 || res.Duplicates != len(urls) {
			t.Fatalf("%s: seen again, %d admitted, %d false-positive skips, %d duplicates; want %d duplicates",
				when, res.Admitted, res.FPSkips, res.Duplicates, len(urls))
		}
	}
	if res := h.seed(urls...); res.Admitted != len(urls) {
		t.Fatalf("admitted %d of %d", res.Admitted, len(urls))
	}
	if n := truthKeys(); n != 0 {
		t.Fatalf("%d keys in truth after Apply, want them waiting for Compact", n)
	}
	again("before a compaction")
	if e, err := h.s.Explain(urls[7]); err != nil || !e.InTruth {
		t.Fatalf("explain of a waiting key: in truth %v, %v", e.InTruth, err)
	}
	// Two leases from the inbox, finished: their keys go to truth with them.
	leased := 0
	for _, l := range h.lease(10) {
		h.apply(nil, outcome(l, 200))
		leased++
	}
	if n := truthKeys(); leased == 0 || n != leased {
		t.Fatalf("%d keys in truth after %d leases from the inbox", n, leased)
	}
	h.crash()
	again("after a crash")
	if _, err := h.s.Compact(); err != nil {
		t.Fatal(err)
	}
	if n := truthKeys(); n != len(urls) {
		t.Fatalf("%d keys in truth after Compact, want %d", n, len(urls))
	}
	if len(h.s.truthPending) != 0 {
		t.Fatalf("%d keys still pending after Compact", len(h.s.truthPending))
	}
	h.crash()
	again("after Compact and a crash")
}

// Prepare looks up sampled links in truth's written keys, so that Apply
// need not: a link whose key is written is marked, a pending or unknown
// one is not, and Apply's verdicts are the same either way.
func TestPrepareLooksUpWrittenTruth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Audit.Fraction = 1
	})
	urls := hostURLs(40, 4)
	marked := func(p Prepared) (n int) {
		for _, pl := range p.Links {
			if pl.inTruth {
				n++
			}
		}
		return n
	}
	h.seed(urls[:20]...)
	// Pending (in the inbox, not yet in truth): not marked, and still
	// duplicates.
	p := h.s.Prepare(links("", 0, urls...))
	if n := marked(p); n != 0 {
		t.Fatalf("%d links marked in truth before any compaction", n)
	}
	if _, err := h.s.Compact(); err != nil {
		t.Fatal(err)
	}
	p = h.s.Prepare(links("", 0, urls...))
	if len(p.Links) != len(urls) {
		t.Fatalf("prepared %d links of %d", len(p.Links), len(urls))
	}
	for i, pl := range p.Links {
		if want := i < 20; pl.inTruth != want {
			t.Errorf("%s: inTruth %v, want %v", pl.Key, pl.inTruth, want)
		}
	}
	res, err := h.s.Apply([]Prepared{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicates != 20 || res.Admitted != 20 || res.FPSkips != 0 {
		t.Fatalf("after Compact: %d duplicates, %d admitted, %d false-positive skips; want 20, 20, 0", res.Duplicates, res.Admitted, res.FPSkips)
	}
	// Without the marks (as if prepared before the compaction), the same.
	again := h.s.Prepare(links("", 0, urls...))
	for i := range again.Links {
		again.Links[i].inTruth = false
	}
	res, err = h.s.Apply([]Prepared{again}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicates != len(urls) || res.Admitted != 0 || res.FPSkips != 0 {
		t.Fatalf("unmarked: %d duplicates, %d admitted, %d false-positive skips; want %d, 0, 0", res.Duplicates, res.Admitted, res.FPSkips, len(urls))
	}
}

// Prepare's read transactions run beside Apply and Compact (the service
// prepares the next batch while one applies): every key is counted once,
// as new or as a duplicate, whatever Prepare saw.
func TestPrepareBesideApplyAndCompact(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		noRobots(c)
		c.Audit.Fraction = 1
	})
	const rounds, perRound = 40, 50
	batch := func(r int) *LinkBatch {
		// Half of each round repeats the round before.
		urls := make([]string, perRound)
		for i := range urls {
			n := r*perRound/2 + i
			urls[i] = fmt.Sprintf("http://h%d.example/p/%d", n%7, n)
		}
		return links("", 0, urls...)
	}
	prepared := make(chan Prepared, 2)
	go func() {
		defer close(prepared)
		for r := range rounds {
			prepared <- h.s.Prepare(batch(r))
		}
	}()
	var admitted, dups int
	r := 0
	for p := range prepared {
		res, err := h.s.Apply([]Prepared{p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		admitted, dups = admitted+res.Admitted, dups+res.Duplicates
		if res.FPSkips != 0 {
			t.Fatalf("round %d: %d false-positive skips", r, res.FPSkips)
		}
		if r%3 == 0 {
			if _, err := h.s.Compact(); err != nil {
				t.Fatal(err)
			}
		}
		r++
	}
	distinct := (rounds + 1) * perRound / 2
	if admitted != distinct || dups != rounds*perRound-distinct {
		t.Fatalf("admitted %d, duplicates %d; want %d and %d", admitted, dups, distinct, rounds*perRound-distinct)
	}
}
