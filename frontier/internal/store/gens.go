package store

import (
	"encoding/binary"
	"iter"
)

// SealedGens is the list of gens a host has sealed segments under,
// ascending (its queue's order; HostRecord.Sealed), held as the host
// record stores it (host.go): the first gen as a uvarint, then the
// difference from each gen to the next. A host's consecutive gens are a
// compaction or a few apart, so a gen costs a byte or two of memory
// instead of the eight of a []uint64, and every host holds its list for
// as long as it has sealed segments: up to one gen per compaction that
// sealed some of its URLs (Compact seals a run of sealRunBytes or more
// whole), which at 100k hosts and 1e9 queued URLs is hundreds a host.
// The zero value is the empty list.
type SealedGens []byte

// SealedGensOf is the list of gs, which must ascend.
func SealedGensOf(gs ...uint64) SealedGens {
	var g SealedGens
	for _, gen := range gs {
		g.Add(gen)
	}
	return g
}

// first is the oldest gen; the list must not be empty.
func (g SealedGens) First() uint64 {
	v, _ := binary.Uvarint(g)
	return v
}

// all yields the gens in order.
func (g SealedGens) All() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		var gen uint64
		for b := g; len(b) > 0; {
			d, n := binary.Uvarint(b)
			if n <= 0 {
				return // not from add or DecodeHost, which check every varint
			}
			b, gen = b[n:], gen+d
			if !yield(gen) {
				return
			}
		}
	}
}

// last is the newest gen, 0 for the empty list.
func (g SealedGens) Last() uint64 {
	var gen uint64
	for gen = range g.All() {
	}
	return gen
}

// count is how many gens the list holds: the bytes that end a uvarint.
func (g SealedGens) Count() int {
	n := 0
	for _, b := range g {
		if b < 0x80 {
			n++
		}
	}
	return n
}

// list is the gens as a slice, for messages and tests.
func (g SealedGens) List() []uint64 {
	var gs []uint64
	for gen := range g.All() {
		gs = append(gs, gen)
	}
	return gs
}

// add appends gen, which must be above the last gen.
func (g *SealedGens) Add(gen uint64) { g.addAfter(g.Last(), gen) }

// addAfter is add for a caller that knows the last gen (0 when empty):
// last walks the list.
func (g *SealedGens) addAfter(last, gen uint64) {
	*g = binary.AppendUvarint(*g, gen-last)
}

// dropFirst takes the oldest gen off the list. The second becomes the
// first: its value, written over the two varints' bytes (it never needs
// more), so that the list neither allocates nor copies.
func (g *SealedGens) dropFirst() {
	b := *g
	first, n1 := binary.Uvarint(b)
	if n1 <= 0 || n1 == len(b) {
		*g = nil
		return
	}
	d, n2 := binary.Uvarint(b[n1:])
	if n2 <= 0 {
		*g = nil
		return
	}
	second := first + d
	n := n1 + n2 - uvarintLen(second)
	binary.PutUvarint(b[n:], second)
	*g = b[n:]
}

// uvarintLen is the bytes binary.AppendUvarint writes for v.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}
