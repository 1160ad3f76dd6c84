package fetcher

import (
	"slices"
	"sort"
	"strings"

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
	dropped int                      // links too long for the wire, or (more than one shard) that did not canonicalize
	tooLong int                      // of dropped, those too long for the wire
	taken   int                      // links of the batch take returned
	// skipped counts the links of links that seen said were published
	// before (not in batches); remember lists the links to put in seen
	// once the page's links and outcome are acked.
	skipped  int
	remember []remembered
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
// whose URL is longer than the wire allows, or, with more than one shard,
// does not canonicalize, is dropped: the frontier would reject it anyway.
// With seen (nil: none), the links seen has published to their shard
// before are left out and the others listed in remember (see linkCache
// for which).
func route(source string, depth uint32, links []msg.Link, rt msg.Router, seen *linkCache) routed {
	r := routed{batches: map[int][]*msg.LinkBatch{}}
	size := map[int]int{}
	var hashes map[int][][]uint64 // with seen: parallel to batches
	if seen != nil {
		hashes = map[int][][]uint64{}
	}
	for _, l := range links {
		if len(l.URL) > msg.MaxURLLen {
			r.dropped++
			r.tooLong++
			continue
		}
		key, s, err := routeLink(rt, l.URL)
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
			if hashes != nil {
				hashes[s] = append(hashes[s], nil)
			}
		}
		b := bs[len(bs)-1]
		b.Links = append(b.Links, l)
		size[s] += n
		r.links++
		if hashes != nil {
			hs := hashes[s]
			hs[len(hs)-1] = append(hs[len(hs)-1], linkHash(key, &l))
		}
	}
	sort.Ints(r.shards)
	if seen != nil {
		r.skipSeen(seen, depth+1, hashes)
	}
	return r
}

// routeLink returns the shard that owns url and the key the link cache
// knows it by. With one shard (every one-command crawl) nothing needs the
// canonical key: the key is the URL without its fragment (the parser
// gives WHATWG hrefs, so spellings differ little), and the frontier
// canonicalizes the URL, and rejects one that does not, as it does every
// link it receives. That saves a canonicalization per link found, 5% of
// the floor crawl's CPU.
func routeLink(rt msg.Router, url string) (key string, shard int, err error) {
	if rt.Shards == 1 {
		if i := strings.IndexByte(url, '#'); i >= 0 {
			url = url[:i]
		}
		return url, 0, nil
	}
	return rt.Route(url)
}

// skipSeen leaves out of each shard's batches the links seen holds at
// depth or shallower, and lists the others to remember, by the shard's
// view: not at all without one; for a shard with a batch longer than its
// max_links_per_page, none is left out (that would move later links under
// the limit) and only the links before the limit are remembered (the
// others were rejected for their place). Redirects are neither, nor are
// links with a sitemap's LastMod or ChangeFreq: the frontier reads those
// fields again on every visit of the sitemap (a newer lastmod makes a
// done URL due).
func (r *routed) skipSeen(seen *linkCache, depth uint32, hashes map[int][][]uint64) {
	shards := r.shards[:0]
	for _, s := range r.shards {
		v := seen.current(s)
		if v == nil {
			shards = append(shards, s)
			continue
		}
		skip := true
		for _, b := range r.batches[s] {
			skip = skip && len(b.Links) <= v.maxPerPage
		}
		var kept []*msg.LinkBatch
		for bi, b := range r.batches[s] {
			links := b.Links[:0]
			for i, l := range b.Links {
				h := hashes[s][bi][i]
				switch {
				case parser.Kind(l.Kind) == parser.KindRedirect, !l.LastMod.IsZero(), l.ChangeFreq > 0:
				case skip && seen.has(s, h, depth):
					r.skipped++
					continue
				case i < v.maxPerPage:
					r.remember = append(r.remember, remembered{shard: s, hash: h, view: v})
				}
				links = append(links, l)
			}
			if b.Links = links; len(links) > 0 {
				kept = append(kept, b)
			}
		}
		if r.batches[s] = kept; len(kept) > 0 {
			shards = append(shards, s)
		} else {
			delete(r.batches, s)
		}
	}
	r.shards = shards
}
