package frontiertest

import (
	"path/filepath"
	"testing"

	"github.com/trawlhq/trawl/frontier"
	"github.com/trawlhq/trawl/frontier/internal/statetest"
	"github.com/trawlhq/trawl/internal/config"
)

// Clock is a settable test clock (statetest.Clock).
type Clock = statetest.Clock

// NewClock returns a Clock at 2026-01-01 00:00 UTC.
func NewClock() *Clock { return statetest.NewClock() }

// Config is the configuration package frontier's own tests start from:
// the default with one fixed filter for 100,000 keys at 1% and up to
// 1,000 leases a reply.
func Config() config.Config { return statetest.Config() }

// NoRobots is a Harness option for tests robots.txt would only get in
// the way of: robots.txt not obeyed, links to any host admitted.
func NoRobots(c *config.Config) { statetest.NoRobots(c) }

// Harness is a State in a temporary directory, opened with Cfg and
// Clock. S is nil while it is closed.
type Harness struct {
	T     testing.TB
	Cfg   config.Config
	Path  string
	Clock *Clock
	S     *frontier.State
}

// New opens a Harness with Config changed by mutate (when not nil); the
// State is closed when the test ends.
func New(t testing.TB, mutate func(*config.Config)) *Harness {
	t.Helper()
	cfg := Config()
	if mutate != nil {
		mutate(&cfg)
	}
	h := &Harness{T: t, Cfg: cfg, Path: filepath.Join(t.TempDir(), "f.db"), Clock: NewClock()}
	h.Open()
	t.Cleanup(func() {
		if h.S != nil {
			h.S.Close()
		}
	})
	return h
}

// Options are the frontier.Options the Harness opens its State with.
func (h *Harness) Options() frontier.Options {
	return frontier.Options{Config: h.Cfg, Path: h.Path, Now: h.Clock.Now}
}

// Open opens the State at Path.
func (h *Harness) Open() {
	h.T.Helper()
	s, err := frontier.Open(h.Options())
	if err != nil {
		h.T.Fatalf("Open: %v", err)
	}
	h.S = s
}

// Close closes the State, leaving S nil.
func (h *Harness) Close() {
	h.T.Helper()
	if err := h.S.Close(); err != nil {
		h.T.Fatalf("Close: %v", err)
	}
	h.S = nil
}

// Reopen closes the State and opens it again.
func (h *Harness) Reopen() {
	h.T.Helper()
	h.Close()
	h.Open()
}

// Apply prepares and applies batches and outcomes.
func (h *Harness) Apply(batches []*frontier.LinkBatch, outcomes ...*frontier.Outcome) frontier.ApplyResult {
	h.T.Helper()
	var ps []frontier.Prepared
	for _, b := range batches {
		ps = append(ps, h.S.Prepare(b))
	}
	os := make([]frontier.Outcome, len(outcomes))
	for i, o := range outcomes {
		os[i] = *o
	}
	res, err := h.S.Apply(ps, os)
	if err != nil {
		h.T.Fatalf("Apply: %v", err)
	}
	return res
}

// Seed applies urls as seeds.
func (h *Harness) Seed(urls ...string) frontier.ApplyResult {
	h.T.Helper()
	return h.Apply([]*frontier.LinkBatch{Links("", 0, urls...)})
}

// Lease leases up to max URLs.
func (h *Harness) Lease(max int) []frontier.Lease {
	h.T.Helper()
	ls, err := h.S.Lease(max)
	if err != nil {
		h.T.Fatalf("Lease: %v", err)
	}
	return ls
}

// Outcome is a finished fetch of lease l with HTTP status.
func Outcome(l frontier.Lease, status int) *frontier.Outcome {
	return &frontier.Outcome{LeaseID: l.ID, URL: l.URL, Status: status}
}

// RobotsOutcome is a finished fetch of robots.txt lease l: status, body.
func RobotsOutcome(l frontier.Lease, status int, body string) *frontier.Outcome {
	o := Outcome(l, status)
	o.Body = []byte(body)
	return o
}

// Links is a batch of urls (kind 1, a page link) found on source at depth.
func Links(source string, depth uint32, urls ...string) *frontier.LinkBatch {
	lb := &frontier.LinkBatch{Source: source, Depth: depth}
	for _, u := range urls {
		lb.Links = append(lb.Links, frontier.Link{URL: u, Kind: 1})
	}
	return lb
}
