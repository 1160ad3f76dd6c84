//go:build linux

package dedup

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size transparent huge pages come in on x86-64 and arm64.
const hugePage = 2 << 20

// allocWords returns a zeroed array of n words in one anonymous mapping,
// aligned to 2 MiB and advised to use transparent huge pages: random access
// over a 1.2 GiB array is several times faster when the TLB covers it. A
// background goroutine backs the whole array (see populate), so New returns
// at once and the array is resident soon after; release stops it before
// unmapping. populated is closed when that pass ends (done, stopped or
// unsupported).
func allocWords(n uint64) (words []uint64, release func() error, populated <-chan struct{}, err error) {
	if n == 0 {
		return nil, func() error { return nil }, closedChan, nil
	}
	size := n * 8
	mapped := (size + hugePage - 1) / hugePage * hugePage
	raw, err := unix.Mmap(-1, 0, int(mapped+hugePage), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: mmap %d bytes: %w", ErrTooLarge, mapped, err)
	}
	off := uint64(0)
	if r := uint64(uintptr(unsafe.Pointer(&raw[0]))) % hugePage; r != 0 {
		off = hugePage - r
	}
	region := raw[off : off+mapped]
	// Advice only: a kernel without THP still gives a working array.
	_ = unix.Madvise(region, unix.MADV_HUGEPAGE)
	var stop atomic.Bool
	done := make(chan struct{})
	go populate(region, &stop, done)
	words = unsafe.Slice((*uint64)(unsafe.Pointer(&region[0])), n)
	return words, func() error {
		stop.Store(true)
		<-done
		return unix.Munmap(raw)
	}, done, nil
}

// populateStep is how much of the array populate backs per call: small
// enough that release waits for at most one step (tens of milliseconds).
const populateStep = 64 << 20

// populate backs region with memory (MADV_POPULATE_WRITE, Linux 5.14+;
// older kernels fault it in lazily), step by step until done or stopped.
// Keys hash to random positions, so a crawl's first keys touch every page
// anyway: random first-touch faults cost about 2.6 s of CPU in the first
// 40,000 pages of a crawl, taken inside the frontier's state lock, against
// about 1 s for one sequential pass here. In the background the pass
// overlaps the start of the crawl (opening NATS, the first robots.txt
// fetches) instead of delaying it: New(1e9) took 0.3-2.5 s with the pass
// in line (the first touch of a VM's memory is the slow case). Faults the
// crawl takes meanwhile are still correct, only slower.
func populate(region []byte, stop *atomic.Bool, done chan<- struct{}) {
	defer close(done)
	for off := 0; off < len(region) && !stop.Load(); off += populateStep {
		if unix.Madvise(region[off:min(off+populateStep, len(region))], unix.MADV_POPULATE_WRITE) != nil {
			return // an old kernel: the array is faulted in as it is used
		}
	}
}

// memoryLimit is the machine's physical memory in bytes (0 if unknown).
func memoryLimit() uint64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
