package fetcher

import (
	"sync/atomic"

	"github.com/trawlhq/trawl/internal/msg"
)

// pageBudget is the worker's share of crawl.max_pages: pages (robots.txt
// leases aside) reserved by lease requests in flight and taken by leases
// started, less those given back. Lease loops reserve before they ask,
// settle when the reply comes (charging the page leases granted, giving
// back the rest, and charging leases a frontier granted beyond the ask),
// and a lease that ends unfetched (expired, released) is given back. A
// zero max means no budget: reserve grants everything and nothing is
// counted.
type pageBudget struct {
	max     int64
	charged atomic.Int64
}

// reserve takes up to n pages and returns how many it took.
func (b *pageBudget) reserve(n int) int {
	if b.max <= 0 {
		return n
	}
	for {
		c := b.charged.Load()
		k := min(int64(n), b.max-c)
		if k <= 0 {
			return 0
		}
		if b.charged.CompareAndSwap(c, c+k) {
			return int(k)
		}
	}
}

// settle turns a reservation into the page leases granted: what was
// reserved and not granted goes back, what was granted beyond it is
// charged.
func (b *pageBudget) settle(reserved int, granted []msg.Lease) {
	if b.max <= 0 {
		return
	}
	pages := 0
	for _, l := range granted {
		if !l.Robots {
			pages++
		}
	}
	if d := pages - reserved; d != 0 {
		b.charged.Add(int64(d))
	}
}

// giveBack returns the page of a lease that ends unfetched.
func (b *pageBudget) giveBack(l msg.Lease) {
	if b.max > 0 && !l.Robots {
		b.charged.Add(-1)
	}
}
