package dedup

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// The chain's batch lookup. A key is tested against every sub-filter at
// once: each (key, sub-filter) pair is a probe that walks the key's
// positions in that sub-filter. In each round every live probe's next cache
// line is prefetched, then every probe reads its bit: a clear bit ends the
// probe (the key is not in that sub-filter), a probe whose k bits are all
// set finds the key and ends every other probe of it. A key absent from a
// full sub-filter is dismissed after about two positions there (each is set
// with probability about 1/2), so a new key costs about two cache lines per
// older sub-filter instead of k, and all of them are in flight together.

// probe is one key's walk through one sub-filter's positions.
type probe struct {
	g, d uint64 // current position, and step (Standard) or page (Paged)
	sub  uint8  // index in the chain
	key  uint8  // index in the group
	j    uint8  // positions found set so far
}

// lookupScratch holds a group's probes; pooled because a chain's groups
// would otherwise zero tens of kilobytes each.
type lookupScratch struct {
	probes []probe
	addrs  []uintptr
}

var lookupPool = sync.Pool{New: func() any { return new(lookupScratch) }}

// testHashes tests hs against subs in groups of chainGroup.
func testHashes(subs []*Filter, hs []uint64, seen []bool) {
	_ = seen[:len(hs)]
	for start := 0; start < len(hs); start += chainGroup {
		end := min(start+chainGroup, len(hs))
		testChain(subs, hs[start:end], seen[start:end])
	}
}

// testChain sets seen[i] for each hs[i] (at most chainGroup of them) that
// some sub-filter of subs holds, and clears it for the others.
func testChain(subs []*Filter, hs []uint64, seen []bool) {
	for i := range seen {
		seen[i] = false
	}
	sc := lookupPool.Get().(*lookupScratch)
	defer lookupPool.Put(sc)
	if subs[0].sz.Layout == Blocked {
		testChainBlocked(subs, hs, seen, sc)
		return
	}
	paged := subs[0].sz.Layout == Paged
	ps := sc.probes[:0]
	for i, h := range hs {
		h2 := Mix64(h)
		// Newest first: it holds the most keys.
		for si := len(subs) - 1; si >= 0; si-- {
			f := subs[si]
			p := probe{sub: uint8(si), key: uint8(i)}
			if paged {
				base, size := f.page(h)
				p.g, p.d = base+pageOffset(h, 0, size), base
			} else {
				p.g, p.d = reduce(h, f.sz.Bits), f.step(h2)
			}
			ps = append(ps, p)
		}
	}
	for len(ps) > 0 {
		addrs := sc.addrs[:0]
		for _, p := range ps {
			addrs = append(addrs, uintptr(unsafe.Pointer(&subs[p.sub].words[p.g>>6])))
		}
		prefetchAddrs(addrs)
		sc.addrs = addrs
		live := ps[:0]
		for _, p := range ps {
			if seen[p.key] {
				continue
			}
			f := subs[p.sub]
			if atomic.LoadUint64(&f.words[p.g>>6])&(1<<(p.g&63)) == 0 {
				continue
			}
			if p.j++; int(p.j) == f.sz.K {
				seen[p.key] = true
				continue
			}
			if paged {
				p.g = p.d + pageOffset(hs[p.key], int(p.j), f.pageSize(p.d))
			} else if p.g += p.d; p.g >= f.sz.Bits {
				p.g -= f.sz.Bits
			}
			live = append(live, p)
		}
		ps = live
	}
	sc.probes = ps
}

// testChainBlocked is testChain for the Blocked layout: one cache line per
// key and sub-filter, all prefetched before any is read.
func testChainBlocked(subs []*Filter, hs []uint64, seen []bool, sc *lookupScratch) {
	ps := sc.probes[:0]
	addrs := sc.addrs[:0]
	for i, h := range hs {
		for si := len(subs) - 1; si >= 0; si-- {
			f := subs[si]
			base := reduce(h, f.blocks) * 8
			ps = append(ps, probe{g: base, sub: uint8(si), key: uint8(i)})
			addrs = append(addrs, uintptr(unsafe.Pointer(&f.words[base])))
		}
	}
	prefetchAddrs(addrs)
	for _, p := range ps {
		if seen[p.key] {
			continue
		}
		f := subs[p.sub]
		var m [8]uint64
		blockMasks(hs[p.key], f.sz.K, &m)
		if missingWords((*[8]uint64)(f.words[p.g:p.g+8]), &m) == 0 {
			seen[p.key] = true
		}
	}
	sc.probes, sc.addrs = ps, addrs
}
