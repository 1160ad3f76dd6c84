package fetcher

import (
	"sort"

	"github.com/trawlhq/trawl/internal/msg"
	"github.com/trawlhq/trawl/parser"
)

// maxBatchBytes keeps one LinkBatch message under 256 KiB, well inside
// NATS's default 1 MiB payload limit.
const maxBatchBytes = 256 << 10

// routed is the links of one page split into batches by owning shard.
type routed struct {
	shards  []int                    // in ascending order
	batches map[int][]*msg.LinkBatch // shard -> batches, each under maxBatchBytes
	links   int                      // links kept
	dropped int                      // links whose URL did not canonicalize
}

// route groups links by the shard owning their canonical host and splits
// each group into batches under maxBatchBytes. A link whose URL does not
// canonicalize (or is longer than the wire allows) is dropped: the frontier
// would reject it anyway.
func route(source string, depth uint32, links []msg.Link, shards int) routed {
	r := routed{batches: map[int][]*msg.LinkBatch{}}
	size := map[int]int{}
	for _, l := range links {
		if len(l.URL) > msg.MaxURLLen {
			r.dropped++
			continue
		}
		key, err := parser.Canonical(l.URL, 0)
		if err != nil {
			r.dropped++
			continue
		}
		s := msg.ShardOf(parser.Host(key), shards)
		bs := r.batches[s]
		n := len(l.URL) + 8 // URL, its length varint, kind and nofollow bytes
		if len(bs) == 0 || size[s]+n > maxBatchBytes {
			if len(bs) == 0 {
				r.shards = append(r.shards, s)
			}
			bs = append(bs, &msg.LinkBatch{Source: source, Depth: depth})
			r.batches[s] = bs
			size[s] = len(source) + 16
		}
		b := bs[len(bs)-1]
		b.Links = append(b.Links, l)
		size[s] += n
		r.links++
	}
	sort.Ints(r.shards)
	return r
}
