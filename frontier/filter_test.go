package frontier

import (
	"errors"
	"fmt"
	"testing"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/internal/config"
)

// scalable makes a harness's filter a chain that starts at initial keys.
func scalable(initial uint64) func(*config.Config) {
	return func(c *config.Config) {
		c.Frontier.Filter.Mode = "scalable"
		c.Frontier.Filter.Initial = initial
		c.Frontier.Filter.FP = 1e-6 // no false positive among the tests' few thousand keys
		c.Scope.SeedHostsOnly = false
	}
}

func seedN(t *testing.T, h *harness, from, n int) {
	t.Helper()
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://h%d.example/p%d", (from+i)%50, from+i)
	}
	if res := h.seed(urls...); res.Admitted != n {
		t.Fatalf("admitted %d of %d: %+v", res.Admitted, n, res)
	}
}

// TestScalableFilterGrows: the default mode makes a chain that grows past
// its first sub-filter; status, explain and a reopen show the chain.
func TestScalableFilterGrows(t *testing.T) {
	t.Parallel()
	if m := config.Default().Frontier.Filter.Mode; m != "scalable" {
		t.Fatalf("default mode %q, want scalable", m)
	}
	h := newHarness(t, scalable(1000))
	if h.s.FilterMode() != dedup.ModeScalable {
		t.Fatalf("mode %v, want scalable", h.s.FilterMode())
	}
	first := h.s.Status().Filter
	if first.Mode != "scalable" || len(first.Subfilters) != 1 || first.Bytes == 0 || first.Bytes > 64<<10 {
		t.Fatalf("new chain status %+v: want scalable, 1 sub-filter of a few KiB", first)
	}
	for i := 0; i < 5000; i += 500 {
		seedN(t, h, i, 500)
	}
	st := h.s.Status().Filter
	if len(st.Subfilters) < 3 || st.Items != 5000 || st.Bytes <= first.Bytes {
		t.Fatalf("after 5000 keys from 1000: %d sub-filters, %d items, %d bytes; want >= 3 sub-filters (1000+2000+4000)", len(st.Subfilters), st.Items, st.Bytes)
	}
	if st.ImpliedFP > st.TargetFP {
		t.Errorf("compound implied fp %g over the target %g", st.ImpliedFP, st.TargetFP)
	}
	which := func(u string) int {
		t.Helper()
		ex, err := h.s.Explain(u)
		if err != nil || !ex.FilterSeen || ex.FilterSubfilter == nil {
			t.Fatalf("explain %s: %+v, %v; want seen with a sub-filter", u, ex, err)
		}
		return *ex.FilterSubfilter
	}
	if w := which("http://h0.example/p0"); w != 0 {
		t.Errorf("the first key answered by sub-filter %d, want 0", w)
	}
	if w := which("http://h49.example/p4999"); w < 2 {
		t.Errorf("the last key answered by sub-filter %d, want >= 2", w)
	}
	if ex, err := h.s.Explain("http://h1.example/never"); err != nil || ex.FilterSeen || ex.FilterSubfilter != nil {
		t.Errorf("explain of an unseen URL: %+v, %v", ex, err)
	}
	h.reopen()
	if got := h.s.Status().Filter; len(got.Subfilters) != len(st.Subfilters) || got.Items != st.Items {
		t.Fatalf("after reopen %d sub-filters, %d items; want %d, %d", len(got.Subfilters), got.Items, len(st.Subfilters), st.Items)
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
	if res := h.seed("http://h0.example/p0", "http://h3.example/p4003"); res.Admitted != 0 {
		t.Errorf("after reopen %d of 2 known URLs admitted again", res.Admitted)
	}
}

// TestFixedFileKeepsItsKind: a file written with a fixed filter (what every
// state file before scalable mode holds) keeps working as fixed under the
// new scalable default.
func TestFixedFileKeepsItsKind(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil) // testConfig: fixed
	seedN(t, h, 0, 300)
	h.cfg.Frontier.Filter.Mode = "scalable"
	h.reopen()
	if h.s.FilterMode() != dedup.ModeFixed {
		t.Fatalf("mode %v after reopening a fixed file under the scalable default, want fixed", h.s.FilterMode())
	}
	st := h.s.Status().Filter
	if st.Mode != "fixed" || st.Subfilters != nil || st.Items != 300 || st.Capacity != 100_000 {
		t.Fatalf("status %+v, want the fixed filter of 100000 with 300 items", st)
	}
	if res := h.seed("http://h0.example/p0"); res.Admitted != 0 {
		t.Errorf("a known URL admitted again")
	}
	if err := h.s.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestFileKeepsItsLayout: a file keeps the bit layout it was written with
// (standard in every file before paged became the default) when the
// configured layout changes, for either filter kind; a new file takes the
// configured one, paged by default.
func TestFileKeepsItsLayout(t *testing.T) {
	t.Parallel()
	if l := config.Default().Frontier.Filter.Layout; l != "paged" {
		t.Fatalf("default layout %q, want paged", l)
	}
	for _, tc := range []struct {
		name string
		cfg  func(*config.Config)
		n    int
	}{{"fixed", nil, 300}, {"scalable", scalable(1000), 2500}} {
		t.Run(tc.name, func(t *testing.T) {
			fresh := newHarness(t, tc.cfg)
			if l := fresh.s.Status().Filter.Layout; l != "paged" {
				t.Fatalf("a new file's layout %q, want paged", l)
			}
			h := newHarness(t, func(c *config.Config) {
				if tc.cfg != nil {
					tc.cfg(c)
				}
				c.Frontier.Filter.Layout = "standard"
			})
			seedN(t, h, 0, tc.n)
			for _, l := range []string{"paged", "blocked", ""} {
				h.cfg.Frontier.Filter.Layout = l
				h.reopen()
				st := h.s.Status().Filter
				if st.Layout != "standard" || st.Items != uint64(tc.n) || st.Mode != tc.name {
					t.Fatalf("reopened under layout %q: %s filter, layout %q, %d items; want %s, standard, %d", l, st.Mode, st.Layout, st.Items, tc.name, tc.n)
				}
				if res := h.seed("http://h0.example/p0", fmt.Sprintf("http://h%d.example/p%d", (tc.n-1)%50, tc.n-1)); res.Admitted != 0 {
					t.Errorf("reopened under layout %q: %d of 2 known URLs admitted again", l, res.Admitted)
				}
				if err := h.s.Verify(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestScalableMismatchRefused: a chain's plan is fixed for the life of the
// crawl; another growth or rate is refused, the file untouched.
func TestScalableMismatchRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, scalable(1000))
	seedN(t, h, 0, 1500)
	for _, mutate := range []func(*config.Config){
		func(c *config.Config) { c.Frontier.Filter.Growth = 4 },
		func(c *config.Config) { c.Frontier.Filter.Tightening = 0.5 },
		func(c *config.Config) { c.Frontier.Filter.Initial = 2000 },
		func(c *config.Config) { c.Frontier.Filter.FP = 0.001 },
	} {
		cfg := h.cfg
		mutate(&cfg)
		h.s.Close()
		s, err := Open(Options{Config: cfg, Path: h.path, Now: h.clock.Now})
		if err == nil {
			s.Close()
			t.Fatal("opened a chain under another plan")
		}
		if !errors.Is(err, ErrMismatch) {
			t.Errorf("error %v, want ErrMismatch", err)
		}
		h.open()
	}
	if st := h.s.Status().Filter; st.Items != 1500 {
		t.Fatalf("items %d after the refusals, want 1500", st.Items)
	}
}

// TestScalableMaxMemory: past frontier.filter.max_memory the chain stops
// growing and says so; the newest sub-filter overfills and warns.
func TestScalableMaxMemory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		scalable(1000)(c)
		c.Frontier.Filter.MaxMemory = 24 << 10 // room for 1000 and 2000 keys, not 4000
	})
	for i := range 8000 { // an overfilled filter skips some: no count to check
		h.seed(fmt.Sprintf("http://h%d.example/p%d", i%50, i))
	}
	st := h.s.Status().Filter
	if !st.GrowthStopped || !st.Warning || st.Bytes > 24<<10 {
		t.Fatalf("status %+v: want growth stopped, a warning, at most 24 KiB", st)
	}
}

// TestScalableCapacityIsOnlyATarget: for a scalable filter, capacity is the
// count status measures progress against, not a size: a capacity no fixed
// filter could have on this machine (1e12 keys, ~1.1 TiB) still opens.
func TestScalableCapacityIsOnlyATarget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		scalable(1000)(c)
		c.Frontier.Filter.Capacity = 1_000_000_000_000
	})
	if st := h.s.Status().Filter; st.Capacity != 1_000_000_000_000 || st.Bytes > 64<<10 {
		t.Fatalf("status %+v: want capacity 1e12 and a chain of a few KiB", st)
	}
}
