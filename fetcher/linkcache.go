package fetcher

import (
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go"

	"github.com/trawlhq/trawl/internal/msg"
)

// linkCache remembers the links the worker has published and JetStream
// has acknowledged, per frontier shard, so that a link found again (83%
// of a documentation site's links repeat: sidebars, breadcrumbs) is not
// sent, stored, decoded, canonicalized and looked up in the filter once
// more only to be counted a duplicate.
//
// Why skipping cannot lose a URL: a remembered link was stored in the
// shard's stream, so its frontier has decided it or will (admitted it,
// found it a duplicate, or rejected it). A link is skipped only when the
// shard's epoch (msg.HeaderEpoch on its lease replies) is the one the link
// was remembered under, at the same or a greater depth, with the same
// kind and nofollow flag, and only when it was before the shard's
// max_links_per_page in its batch: that frontier would answer it the same
// way again. A new epoch (another frontier process, another state file, a
// seed host added, robots rules replaced) clears the shard's memory. A
// shard whose replies carry no epoch (a frontier of an earlier release)
// gets every link. Redirect links are never skipped: their hop count is
// part of the decision.
//
// Memory is fixed: each shard has a direct-mapped table of uint64 slots
// (crawler.link_cache entries, split between the shards, rounded down to a
// power of two). A slot holds the link's 64-bit hash with its low 8 bits
// replaced by depth+1 (0 = empty); a collision evicts, and a false match
// needs two keys to agree on 56 bits.
type linkCache struct {
	shards []shardCache
}

type shardCache struct {
	view  atomic.Pointer[cacheView] // nil until a reply carried an epoch
	mu    sync.Mutex                // serializes epoch changes (clearing)
	slots []atomic.Uint64
	shift uint // a hash's top bits index slots: 64 - log2(len(slots))
}

// cacheView is one epoch of a shard: links remembered under it are
// skipped while it is the shard's view.
type cacheView struct {
	epoch      string
	maxPerPage int // the shard's scope.max_links_per_page
}

// maxCachedDepth is the deepest link a slot can hold (depth+1 in a byte).
const maxCachedDepth = 254

// newLinkCache returns a cache of about entries slots split between
// shards, or nil (no cache) when entries is 0.
func newLinkCache(entries, shards int) *linkCache {
	per := entries / shards
	if per < 1 {
		return nil
	}
	per = 1 << (bits.Len(uint(per)) - 1)
	c := &linkCache{shards: make([]shardCache, shards)}
	for i := range c.shards {
		c.shards[i].slots = make([]atomic.Uint64, per)
		c.shards[i].shift = uint(64 - bits.TrailingZeros(uint(per)))
	}
	return c
}

// observe takes a shard's epoch from the headers of one of its lease
// replies; a new one clears what the cache holds for the shard.
func (c *linkCache) observe(shard uint32, h nats.Header) {
	if c == nil || int(shard) >= len(c.shards) {
		return
	}
	sc := &c.shards[shard]
	epoch := h.Get(msg.HeaderEpoch)
	maxPerPage, err := strconv.Atoi(h.Get(msg.HeaderLinksPerPage))
	if epoch == "" || err != nil || maxPerPage < 1 {
		epoch, maxPerPage = "", 0 // no epoch: nothing is skipped
	}
	if sc.holds(epoch, maxPerPage) {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.holds(epoch, maxPerPage) {
		return
	}
	sc.view.Store(nil) // nothing is skipped or remembered while clearing
	for i := range sc.slots {
		sc.slots[i].Store(0)
	}
	if epoch != "" {
		sc.view.Store(&cacheView{epoch: epoch, maxPerPage: maxPerPage})
	}
}

// holds reports whether sc's view is the epoch (with maxPerPage) already;
// no view is the empty epoch (a table with no view is empty).
func (sc *shardCache) holds(epoch string, maxPerPage int) bool {
	v := sc.view.Load()
	if v == nil {
		return epoch == ""
	}
	return v.epoch == epoch && v.maxPerPage == maxPerPage
}

// current returns shard's view, nil when links to it are neither skipped
// nor remembered.
func (c *linkCache) current(shard int) *cacheView {
	if c == nil || shard >= len(c.shards) {
		return nil
	}
	return c.shards[shard].view.Load()
}

// kindMix makes the same URL with another kind or nofollow flag another
// key: the frontier's answer depends on both.
var kindMix = [2 * (msg.MaxKind + 1)]uint64{
	0, 0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9, 0x94d049bb133111eb, 0xd6e8feb86659fd93,
	0xa0761d6478bd642f, 0xe7037ed1a0b428db, 0x8ebc6af09c88c6e3, 0x589965cc75374cc3, 0x1d8e4e27c47d124f,
}

// linkHash is the cache key of a link whose canonical key is key.
func linkHash(key string, l *msg.Link) uint64 {
	i := int(l.Kind) * 2
	if l.NoFollow {
		i++
	}
	return xxhash.Sum64String(key) ^ kindMix[i%len(kindMix)]
}

// has reports whether shard remembers h at depth or shallower.
func (c *linkCache) has(shard int, h uint64, depth uint32) bool {
	sc := &c.shards[shard]
	v := sc.slots[h>>sc.shift].Load()
	return v != 0 && v&^0xff == h&^0xff && uint32(v&0xff)-1 <= depth
}

// remembered is a link to put in the cache once its publish is acked.
type remembered struct {
	shard int
	hash  uint64
	view  *cacheView // the shard's view when the link was routed
}

// add remembers the links of rs at depth, each only if its shard's view
// is still the one it was routed under (a link routed before an epoch
// change is not remembered after it).
func (c *linkCache) add(rs []remembered, depth uint32) {
	if c == nil || depth > maxCachedDepth {
		return
	}
	for _, r := range rs {
		sc := &c.shards[r.shard]
		if sc.view.Load() != r.view {
			continue
		}
		slot := &sc.slots[r.hash>>sc.shift]
		if old := slot.Load(); old != 0 && old&^0xff == r.hash&^0xff && uint32(old&0xff)-1 <= depth {
			continue // already there, as shallow or shallower
		}
		slot.Store(r.hash&^0xff | uint64(depth+1))
	}
}
