package frontier

import "github.com/trawlhq/trawl/frontier/internal/store"

// The head cache.
//
// A lease reads the URL at its host's head from the host's first segment
// or, when the host has none, its tail or then its first inbox record,
// and all hold many URLs: decoding one per lease (decompressing it and building every URL
// string) costs in proportion to the record, not the lease. An inbox
// record holds all of a host's URLs from one Apply, up to
// inboxRecordBytes, so a one-host crawl decoded hundreds of URLs per
// lease. headCache keeps the decoded head of the hosts being leased, keyed
// by host, with the bbolt key it was read from, within a byte budget.
//
// An entry is valid while its key still holds what was decoded: segment
// and inbox keys are never reused, and neither a sealed segment nor an
// inbox record ever changes. A tail's key (the host's name) is reused
// from tail to tail, and a tail changes only when Compact appends to it
// or seals it (then the host's entry is dropped). An entry is also
// dropped when its record is deleted.

// headCache maps hosts to their decoded head record, within max bytes
// (frontier.head_cache, 32 MiB by default: the heads of a few thousand
// hosts, a 1,536-byte segment decoding to ~6 KiB). When an insert would
// exceed it the cache is emptied: hosts being leased come back at once,
// idle ones do not. 0 keeps nothing.
type headCache struct {
	m     map[*host]*cachedHead
	bytes int
	max   int
}

type cachedHead struct {
	key   string // the bbolt key (segments, tails or inbox) it was decoded from
	g     store.Segment
	bytes int
}

// headGuess is what a cached head takes, for keeps: a 1,536-byte segment
// decodes to ~6 KiB.
const headGuess = 6 << 10

// keeps reports whether the cache can hold the heads of ready hosts at
// once (the ready hosts with queued URLs: State.readyNew, not the hosts
// waiting only for revisits). Hosts are leased in turn, so when it cannot, a host's cached head
// is dropped (the cache emptied) before the host's next lease, and
// decoding its whole segment only to cache it is wasted: peekLocked then
// reads the head's URL alone. At a million ready hosts that was a fifth
// of the lease + outcome cycle.
func (c *headCache) keeps(ready int) bool { return ready*headGuess <= c.max }

// get returns h's cached head when it was decoded from key.
func (c *headCache) get(h *host, key []byte) *store.Segment {
	if e := c.m[h]; e != nil && e.key == string(key) {
		return &e.g
	}
	return nil
}

// put caches g, decoded from key, as h's head and returns the cached copy.
func (c *headCache) put(h *host, key []byte, g store.Segment) *store.Segment {
	size := 64 + len(key)
	for i := range g.Entries {
		size += len(g.Entries[i].URL) + 48
	}
	c.drop(h)
	if size > c.max {
		return &g
	}
	if c.bytes+size > c.max {
		clear(c.m)
		c.bytes = 0
	}
	if c.m == nil {
		c.m = make(map[*host]*cachedHead)
	}
	e := &cachedHead{key: string(key), g: g, bytes: size}
	c.m[h] = e
	c.bytes += size
	return &e.g
}

// drop forgets h's head.
func (c *headCache) drop(h *host) {
	if e := c.m[h]; e != nil {
		c.bytes -= e.bytes
		delete(c.m, h)
	}
}
