package offline

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/trawlhq/trawl/dedup"
	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/frontiertest"
	"github.com/trawlhq/trawl/internal/config"
)

// grownChain returns a harness whose scalable filter grew to 3+ sub-filters
// over 5000 seeds, some of them leased and finished, then closed.
func grownChain(t *testing.T) *frontiertest.Harness {
	t.Helper()
	h := frontiertest.New(t, func(c *config.Config) {
		c.Frontier.Filter.Mode = "scalable"
		c.Frontier.Filter.Initial = 1000
		c.Frontier.Filter.FP = 1e-6 // no false positive among the test's 5000 keys
		c.Scope.SeedHostsOnly = false
	})
	for i := 0; i < 5000; i += 500 {
		urls := make([]string, 500)
		for j := range urls {
			urls[j] = fmt.Sprintf("http://h%d.example/p%d", (i+j)%50, i+j)
		}
		if res := h.Seed(urls...); res.Admitted != len(urls) {
			t.Fatalf("admitted %d of %d: %+v", res.Admitted, len(urls), res)
		}
	}
	ls := h.Lease(100)
	for _, l := range ls[:len(ls)/2] {
		h.Apply(nil, frontiertest.Outcome(l, 404))
	}
	h.Clock.Advance(time.Minute)
	if got := len(h.S.Status().Filter.Subfilters); got < 3 {
		t.Fatalf("%d sub-filters, want 3+", got)
	}
	h.Close()
	return h
}

// allSeen reseeds every URL of grownChain: none may be admitted again.
func allSeen(t *testing.T, h *frontiertest.Harness) {
	t.Helper()
	urls := make([]string, 5000)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://h%d.example/p%d", i%50, i)
	}
	if res := h.Seed(urls...); res.Admitted != 0 {
		t.Fatalf("%d of 5000 held URLs admitted again after the rebuild", res.Admitted)
	}
}

func TestRebuildFilter(t *testing.T) {
	h := grownChain(t)
	rep, err := RebuildFilter(h.Path, 10_000, 0.01, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Before != "scalable" || rep.Keys < 5000 || rep.Items < 5000 || rep.Sizing.Capacity != 10_000 {
		t.Fatalf("report %+v: want a scalable filter replaced by one for 10000 from 5000+ keys", rep)
	}
	h.Open() // the configured mode is still scalable: the file's fixed filter stands
	if h.S.FilterMode() != dedup.ModeFixed {
		t.Fatalf("mode %v after the rebuild, want fixed", h.S.FilterMode())
	}
	st := h.S.Status().Filter
	if st.Capacity != 10_000 || st.Bytes != rep.Sizing.Bits/8 || len(st.Subfilters) != 0 {
		t.Fatalf("status %+v, want one fixed filter of %d bytes", st, rep.Sizing.Bits/8)
	}
	if err := h.S.Verify(); err != nil {
		t.Fatal(err)
	}
	allSeen(t, h)
}

// TestRebuildFailureKeepsTheOldFilter: an error after the new filter was
// written, before the commit, leaves the old chain whole.
func TestRebuildFailureKeepsTheOldFilter(t *testing.T) {
	h := grownChain(t)
	boom := errors.New("boom")
	fail := &Options{Failpoint: func() error { return boom }}
	if _, err := RebuildFilter(h.Path, 10_000, 0.01, fail); !errors.Is(err, boom) {
		t.Fatalf("rebuild error %v, want the failpoint's", err)
	}
	h.Open()
	if h.S.FilterMode() != dedup.ModeScalable || len(h.S.Status().Filter.Subfilters) < 3 {
		t.Fatalf("after a failed rebuild: mode %v, %d sub-filters; want the old chain", h.S.FilterMode(), len(h.S.Status().Filter.Subfilters))
	}
	allSeen(t, h)
}

// TestRebuildRefuses: a file in use, and a capacity below the held keys.
func TestRebuildRefuses(t *testing.T) {
	h := grownChain(t)
	if _, err := RebuildFilter(h.Path, 1000, 0.01, nil); !errors.Is(err, dedup.ErrInvalid) {
		t.Errorf("rebuild for 1000 of 5000 keys: %v, want dedup.ErrInvalid", err)
	}
	h.Open()
	if _, err := RebuildFilter(h.Path, 10_000, 0.01, nil); !errors.Is(err, frontier.ErrInUse) {
		t.Errorf("rebuild of an open file: %v, want ErrInUse", err)
	}
	allSeen(t, h)
}
