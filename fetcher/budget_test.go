package fetcher

import (
	"testing"

	"github.com/trawlhq/trawl/internal/msg"
)

// TestPageBudget: every path of a lease through the budget leaves the
// charge equal to the pages started and not given back.
func TestPageBudget(t *testing.T) {
	page, robots := msg.Lease{URL: "http://a.test/"}, msg.Lease{URL: "http://a.test/robots.txt", Robots: true}
	b := &pageBudget{max: 10}
	if got := b.reserve(4); got != 4 {
		t.Fatalf("reserve 4 of 10: %d", got)
	}
	b.settle(4, []msg.Lease{page, robots, page}) // 2 pages granted of 4 asked
	if c := b.charged.Load(); c != 2 {
		t.Fatalf("charged %d after 2 pages granted, want 2", c)
	}
	b.settle(b.reserve(3), nil)          // an empty reply
	b.settle(0, []msg.Lease{page, page}) // a late reply at shutdown: charged
	b.giveBack(page)                     // one expired
	b.giveBack(robots)                   // robots leases are never charged
	if c := b.charged.Load(); c != 3 {
		t.Fatalf("charged %d, want 3 (4 pages started, 1 given back)", c)
	}
	if got := b.reserve(20); got != 7 {
		t.Fatalf("reserve 20 with 7 left: %d", got)
	}
	if got := b.reserve(1); got != 0 {
		t.Fatalf("reserve past the budget: %d", got)
	}
	none := &pageBudget{}
	if got := none.reserve(5); got != 5 || none.charged.Load() != 0 {
		t.Fatalf("no budget: reserve %d, charged %d", got, none.charged.Load())
	}
}
