package fetcher

import (
	"slices"
	"sort"

	"github.com/trawlhq/trawl/internal/msg"
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
	taken   int                      // links of the batch take returned
}

// take removes shard's links from r and returns them, when they fit one
// batch, for an outcome to carry; else (none, or more than one batch) it
// leaves r as it is and returns nil.
func (r *routed) take(shard int) *msg.LinkBatch {
	bs := r.batches[shard]
	if len(bs) != 1 {
		return nil
	}
	delete(r.batches, shard)
	r.shards = slices.DeleteFunc(r.shards, func(s int) bool { return s == shard })
	r.taken = len(bs[0].Links)
	return bs[0]
}

// router is the worker's msg.Router, from its options.
func (w *Worker) router() msg.Router {
	return msg.Router{Shards: w.opts.Shards, Rules: w.opts.Canonical}
}

// route groups links by the shard that owns them (rt, the frontiers' own
// router) and splits each group into batches under maxBatchBytes. A link
// whose URL does not canonicalize (or is longer than the wire allows) is
// dropped: the frontier would reject it anyway.
func route(source string, depth uint32, links []msg.Link, rt msg.Router) routed {
	r := routed{batches: map[int][]*msg.LinkBatch{}}
	size := map[int]int{}
	for _, l := range links {
		if len(l.URL) > msg.MaxURLLen {
			r.dropped++
			continue
		}
		_, s, err := rt.Route(l.URL)
		if err != nil {
			r.dropped++
			continue
		}
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
