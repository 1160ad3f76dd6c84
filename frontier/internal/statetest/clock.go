package statetest

import (
	"sync"
	"time"

	"github.com/trawlhq/trawl/internal/config"
)

// Clock is a settable test clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock at 2026-01-01 00:00 UTC.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

// Now is the clock's time (frontier.Options.Now).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Config is the default configuration with a small filter and no
// minimum delay surprises: one fixed filter for 100,000 keys at 1% (the
// core's overfill and mismatch tests need one; filter_test.go covers the
// scalable default) and up to 1,000 leases a reply.
func Config() config.Config {
	cfg := config.Default()
	cfg.Frontier.Filter.Mode = "fixed"
	cfg.Frontier.Filter.Capacity = 100_000
	cfg.Frontier.Filter.FP = 0.01
	cfg.Frontier.MaxLeasesPerReply = 1000
	return cfg
}

// NoRobots is a configuration option for tests robots.txt would only get
// in the way of: robots.txt not obeyed, links to any host admitted.
func NoRobots(c *config.Config) {
	c.Robots.Obey = false
	c.Scope.SeedHostsOnly = false
}
