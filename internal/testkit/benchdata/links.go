package benchdata

import (
	"fmt"
	"os"
	"strconv"

	"github.com/trawlhq/trawl/internal/msg"
)

// LinkGen makes link batches of realistic URLs (about 70 bytes) over
// 10,000 hosts, where a share of the links repeat earlier ones.
type LinkGen struct {
	// Next is the number of distinct URLs made so far (the next new one).
	Next int
}

// URL is the n-th distinct URL.
func (g *LinkGen) URL(n int) string {
	return fmt.Sprintf("https://www.host%d.example.com/section/%d/article-%d.html", n%10_000, n%97, n)
}

// Batches returns pages link batches of perPage links; dupShare of the
// links repeat earlier ones.
func (g *LinkGen) Batches(pages, perPage int, dupShare float64) []*msg.LinkBatch {
	out := make([]*msg.LinkBatch, pages)
	every := 0
	if dupShare > 0 {
		every = int(1 / (1 - dupShare)) // one new link in every `every`
	}
	for p := range out {
		lb := &msg.LinkBatch{Source: "https://www.host1.example.com/", Depth: 1, Links: make([]msg.Link, perPage)}
		for i := range lb.Links {
			var n int
			if every == 0 || (p*perPage+i)%every == 0 || g.Next == 0 {
				n = g.Next
				g.Next++
			} else {
				n = (p*7919 + i*104729) % g.Next // an earlier link
			}
			lb.Links[i] = msg.Link{URL: g.URL(n), Kind: 1}
		}
		out[p] = lb
	}
	return out
}

// FilterCapacity sizes the frontier benchmarks' filter: TRAWL_BENCH_CAPACITY, default
// 1e8 (120 MB; a real 1e9 filter only changes the cache-miss cost per key,
// which dedup's own benchmarks measure).
func FilterCapacity() uint64 {
	if v, err := strconv.ParseUint(os.Getenv("TRAWL_BENCH_CAPACITY"), 10, 64); err == nil && v > 0 {
		return v
	}
	return 100_000_000
}
