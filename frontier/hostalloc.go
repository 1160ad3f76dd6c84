package frontier

import (
	"strings"
	"unsafe"
)

// The host table's memory.
//
// A shard knows every host it ever saw (a million on a broad crawl), and
// the garbage collector visits every pointer to them at each cycle. One
// allocation per host and one per host name spread those pointers over
// tens of thousands of spans: at a million hosts the collector's span
// lookups were a third of the ingest's CPU (the scale benchmark's
// profile). hostAlloc hands out hosts from blocks and copies their names
// into blocks of bytes, so the table is a few hundred objects, and a
// host's name no longer keeps alive the link it was first seen in.
// Hosts are never freed, so nothing is lost by not freeing them one by
// one.

const (
	// hostBlockMax is the most hosts one block holds (the first blocks
	// are smaller, doubling, so a small crawl's table stays small).
	hostBlockMax = 4096
	// nameBlock is the size of a block of host names; longer names are
	// allocated on their own.
	nameBlock = 64 << 10
)

// hostAlloc allocates hosts and their names. Call with State.mu held.
type hostAlloc struct {
	block []host // the current block: its free hosts are block[len:cap]
	names []byte // the current name block: free past len
	next  int    // the size of the next host block
}

// new returns a host named name (copied) with no record yet, not in the
// ready heap.
func (a *hostAlloc) new(name string) *host {
	if len(a.block) == cap(a.block) {
		a.next = min(max(2*a.next, 16), hostBlockMax)
		a.reserve(a.next)
	}
	a.block = a.block[:len(a.block)+1]
	h := &a.block[len(a.block)-1]
	*h = host{name: a.intern(name), idx: -1}
	return h
}

// reserve starts a new block with room for n hosts unless the current
// one has that room (Open reserves the hosts it is about to load).
func (a *hostAlloc) reserve(n int) {
	if cap(a.block)-len(a.block) < n {
		a.block = make([]host, 0, n)
	}
}

// intern returns a copy of name in a name block. The bytes of a block
// are written once, before the string over them is handed out, and never
// again, which is what unsafe.String requires.
func (a *hostAlloc) intern(name string) string {
	if len(name) == 0 {
		return ""
	}
	if len(name) > nameBlock/16 {
		return strings.Clone(name)
	}
	if cap(a.names)-len(a.names) < len(name) {
		a.names = make([]byte, 0, nameBlock)
	}
	off := len(a.names)
	a.names = append(a.names, name...)
	return unsafe.String(&a.names[off], len(name))
}
