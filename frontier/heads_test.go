package frontier

import (
	"fmt"
	"testing"

	"github.com/trawlhq/trawl/internal/config"
)

// TestHeadCacheWithRevisitHosts: in a continuous crawl, hosts waiting
// only for revisits sit in the ready heap but do not count against the
// head cache, which still caches the queue head of a host with new URLs.
// A 100 KiB cache keeps 16 heads (headGuess): 40 revisit-only hosts
// stand for the 5,462 and more that stopped the default 32 MiB cache
// from caching when they counted.
func TestHeadCacheWithRevisitHosts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *config.Config) {
		continuousConfig(c)
		c.Frontier.HeadCache = 100 << 10
	})
	var revisitOnly []string
	for i := range 40 {
		revisitOnly = append(revisitOnly, fmt.Sprintf("http://r%02d.example/", i))
	}
	h.seed(revisitOnly...)
	if got := h.fetchAll(1); len(got) != len(revisitOnly) {
		t.Fatalf("fetched %d, want %d", len(got), len(revisitOnly))
	}
	if len(h.s.ready) != 40 || h.s.readyNew != 0 {
		t.Fatalf("ready heap %d hosts, %d with queued URLs; want 40 and 0", len(h.s.ready), h.s.readyNew)
	}
	var fresh []string
	for i := range 50 {
		fresh = append(fresh, fmt.Sprintf("http://n.example/%d", i))
	}
	h.seed(fresh...)
	if _, err := h.s.Compact(); err != nil { // n.example's queue into a segment
		t.Fatal(err)
	}
	if h.s.readyNew != 1 {
		t.Fatalf("%d ready hosts with queued URLs, want 1", h.s.readyNew)
	}
	ls := h.lease(1)
	if len(ls) != 1 || ls[0].Revisit || ls[0].URL != fresh[0] {
		t.Fatalf("leases %+v, want %s", ls, fresh[0])
	}
	if h.s.heads.m[h.s.hosts["n.example"]] == nil {
		t.Fatalf("n.example's queue head not cached beside %d revisit-only ready hosts", len(h.s.ready)-1)
	}
	checkSchedule(t, h.s)
}
