package frontier

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/trawlhq/trawl/frontier/internal/statetest"
	"github.com/trawlhq/trawl/internal/config"
	"github.com/trawlhq/trawl/internal/msg"
)

// clock is a settable test clock.
type clock = statetest.Clock

func newClock() *clock { return statetest.NewClock() }

// testConfig is the default configuration with a small filter and no
// minimum delay surprises (statetest.Config: one fixed filter, whose
// overfill and mismatch cases the core's tests need; filter_test.go
// covers the scalable default).
func testConfig() config.Config { return statetest.Config() }

type harness struct {
	t     *testing.T
	cfg   config.Config
	tune  func(*knobs) // Options.tune of every Open
	path  string
	clock *clock
	s     *State
}

func newHarness(t *testing.T, mutate func(*config.Config)) *harness {
	t.Helper()
	return newTunedHarness(t, mutate, nil)
}

// newTunedHarness is newHarness with the State's knobs changed by tune.
func newTunedHarness(t *testing.T, mutate func(*config.Config), tune func(*knobs)) *harness {
	t.Helper()
	cfg := testConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	h := &harness{t: t, cfg: cfg, tune: tune, path: filepath.Join(t.TempDir(), "f.db"), clock: newClock()}
	h.open()
	t.Cleanup(func() {
		if h.s != nil {
			h.s.Close()
		}
	})
	return h
}

func (h *harness) open() {
	h.t.Helper()
	s, err := Open(Options{Config: h.cfg, Path: h.path, Now: h.clock.Now, tune: h.tune})
	if err != nil {
		h.t.Fatalf("Open: %v", err)
	}
	h.s = s
}

func (h *harness) reopen() {
	h.t.Helper()
	if err := h.s.Close(); err != nil {
		h.t.Fatalf("Close: %v", err)
	}
	h.open()
}

// apply prepares and applies batches and outcomes.
func (h *harness) apply(batches []*LinkBatch, outcomes ...*Outcome) ApplyResult {
	h.t.Helper()
	var ps []Prepared
	for _, b := range batches {
		ps = append(ps, h.s.Prepare(b))
	}
	os := make([]Outcome, len(outcomes))
	for i, o := range outcomes {
		os[i] = *o
	}
	res, err := h.s.Apply(ps, os)
	if err != nil {
		h.t.Fatalf("Apply: %v", err)
	}
	return res
}

func (h *harness) seed(urls ...string) ApplyResult {
	h.t.Helper()
	return h.apply([]*LinkBatch{links("", 0, urls...)})
}

func (h *harness) lease(max int) []Lease {
	h.t.Helper()
	ls, err := h.s.Lease(max)
	if err != nil {
		h.t.Fatalf("Lease: %v", err)
	}
	return ls
}

// outcome is a finished fetch of lease l.
func outcome(l Lease, status int) *Outcome {
	return &Outcome{LeaseID: l.ID, URL: l.URL, Status: status}
}

func links(source string, depth uint32, urls ...string) *LinkBatch {
	lb := &LinkBatch{Source: source, Depth: depth}
	for _, u := range urls {
		lb.Links = append(lb.Links, Link{URL: u, Kind: 1})
	}
	return lb
}

// coreBatches is wire link batches (benchdata makes them for the service
// too) as the core's.
func coreBatches(lbs []*msg.LinkBatch) []*LinkBatch {
	out := make([]*LinkBatch, len(lbs))
	for i, lb := range lbs {
		c := &LinkBatch{Source: lb.Source, Depth: lb.Depth, Links: make([]Link, len(lb.Links))}
		for j, l := range lb.Links {
			c.Links[j] = Link(l)
		}
		out[i] = c
	}
	return out
}

// keyCount is how many keys b holds (its Stats count only what is
// committed).
func keyCount(b *bolt.Bucket) int { return statetest.KeyCount(b) }

// fileSum is the SHA-256 of the file at path.
func fileSum(t testing.TB, path string) [32]byte { t.Helper(); return statetest.FileSum(t, path) }
