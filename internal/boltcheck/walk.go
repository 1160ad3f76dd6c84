package boltcheck

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
)

type checker struct {
	r       io.ReaderAt
	size    int64
	m       Meta
	visited []uint64 // bitmap of page ids reached
	reached uint64
	split   int                           // Options.Split
	seen    func(id uint64, flags uint16) // Options.Page
	record  func(key, value []byte)       // Options.Record
	next    []pageRef                     // the pages the level being checked references
}

// pageRef is a page to check: its id, its depth in the tree and the
// bounds [lo, hi) its parent sets on its keys (nil: unbounded).
type pageRef struct {
	id     uint64
	depth  int
	lo, hi []byte
}

// The walk goes a level at a time and reads each level's pages in file
// order, runs of nearby pages in one read: bbolt scatters a bucket's
// pages over the file, and one read per page in tree order was most of
// File's time (208,000 reads at 20M URLs over 1M hosts).
const (
	runGap   = 8   // pages: a hole up to this size is read through
	runPages = 256 // pages: the largest read
)

func (c *checker) check() (Info, error) {
	info := Info{Size: c.size}
	m, err := c.meta()
	if err != nil {
		return info, err
	}
	c.m = m
	info.PageSize, info.Pages, info.TxID = m.PageSize, m.Pages, m.TxID
	if need := m.Pages * m.PageSize; m.Pages > uint64(c.size) || need > uint64(c.size) {
		return info, fmt.Errorf("file is %d bytes, but its meta page says %d pages of %d bytes (%d bytes): truncated below its data", c.size, m.Pages, m.PageSize, m.Pages*m.PageSize)
	}
	if m.Pages < 3 {
		return info, fmt.Errorf("meta page high water mark %d", m.Pages)
	}
	c.visited = make([]uint64, (m.Pages+63)/64)
	c.mark(0, 0)
	c.mark(1, 0)
	var free []byte
	if m.Freelist != NoFreelist {
		if free, err = c.freelist(m.Freelist); err != nil {
			return info, err
		}
	}
	level := []pageRef{{id: m.Root}}
	for len(level) > 0 {
		if level, err = c.level(level); err != nil {
			return info, err
		}
	}
	info.Reached = c.reached
	if m.Freelist != NoFreelist {
		info.Freelist, info.Free = true, uint64(len(free)/8)
		if err := c.freeIDs(free); err != nil {
			return info, err
		}
		// bbolt's own check (tx.Check) reports a page neither reached
		// nor free; so does this one, so that a program refuses to open
		// what bbolt's check calls inconsistent.
		if info.Reached+info.Free != m.Pages {
			return info, fmt.Errorf("%d pages reached and %d free of %d below the high water mark: a page neither in use nor free (a garbled freelist)", info.Reached, info.Free, m.Pages)
		}
	}
	return info, nil
}

// freeIDs checks the page ids of a freelist page (free, 8 bytes each)
// against the walk: bbolt hands a free page to the next write, so a
// freelist that names a page in use, or one past the high water mark,
// would have it overwritten. (It marks them as mark marks reached pages;
// check has taken Reached before.)
func (c *checker) freeIDs(free []byte) error {
	for i := 0; i < len(free); i += 8 {
		if id := ne.Uint64(free[i:]); !c.mark(id, 0) {
			return fmt.Errorf("freelist names page %d: past the high water mark %d, in use, or named twice", id, c.m.Pages)
		}
	}
	return nil
}

// mark records pages id..id+overflow as reached; it reports whether they
// are in range and were not reached before.
func (c *checker) mark(id, overflow uint64) bool {
	if id >= c.m.Pages || overflow >= c.m.Pages-id {
		return false
	}
	// Atomic: two goroutines walk halves of a level (level); a page
	// both reach is one whichever sets its bit second reports.
	for p := id; p <= id+overflow; p++ {
		if atomic.OrUint64(&c.visited[p/64], 1<<(p%64))&(1<<(p%64)) != 0 {
			return false
		}
	}
	c.reached += overflow + 1
	return true
}

// span is a page with its overflow pages as File reads it: the
// first bytes at once, the rest only where a check needs them (keys and
// bucket values), never the bytes of plain values. A value's bytes are
// nothing bbolt follows, and the 1 MiB chunks of a 1e9 filter are more
// than half of a big file: reading them made File cost per byte of
// the file instead of per page.
type span struct {
	r    io.ReaderAt // nil: b is all of it (an inline page)
	off  int64       // file offset of the page
	b    []byte      // the first len(b) bytes
	size uint64      // bytes over the page and its overflow pages
}

// at returns n bytes from offset from within the span, which the caller
// has checked lie inside it.
func (p *span) at(from, n uint64) ([]byte, error) {
	if from+n <= uint64(len(p.b)) {
		return p.b[from : from+n], nil
	}
	return readAt(p.r, p.off+int64(from), n)
}

// readAt returns n bytes of r from off: a slice of the map when r is a
// mapped file, else a read into a new buffer.
func readAt(r io.ReaderAt, off int64, n uint64) ([]byte, error) {
	if m, ok := r.(mapped); ok {
		if off < 0 || uint64(off)+n > uint64(len(m)) {
			return nil, io.ErrUnexpectedEOF
		}
		return m[off : uint64(off)+n : uint64(off)+n], nil
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

// mapped is a file's bytes in memory, a read-only map (File) or a
// caller's slice (CheckBytes), read without copying.
type mapped []byte

func (m mapped) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m)) {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(b, m[off:])
	if n < len(b) {
		return n, io.ErrUnexpectedEOF
	}
	return n, nil
}

// read returns page id with its overflow pages, after checking its
// header, with its first page read.
func (c *checker) read(id uint64, wantFlags uint16) (*span, error) {
	if id < 2 || id >= c.m.Pages {
		return nil, fmt.Errorf("page %d referenced, outside 2..%d", id, c.m.Pages-1)
	}
	b, err := readAt(c.r, int64(id*c.m.PageSize), c.m.PageSize)
	if err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	return c.header(id, b, wantFlags)
}

// header checks the header of page id, whose first page is b, and marks
// its pages reached.
func (c *checker) header(id uint64, b []byte, wantFlags uint16) (*span, error) {
	if got := ne.Uint64(b[0:]); got != id {
		return nil, fmt.Errorf("page %d: its header says page %d", id, got)
	}
	flags := ne.Uint16(b[8:])
	ok := flags == wantFlags
	if wantFlags == PageBranch|PageLeaf { // either, not both
		ok = flags == PageBranch || flags == PageLeaf
	}
	if !ok {
		return nil, fmt.Errorf("page %d: flags %#x, want %#x", id, flags, wantFlags)
	}
	overflow := uint64(ne.Uint32(b[12:]))
	if !c.mark(id, overflow) {
		return nil, fmt.Errorf("page %d (+%d overflow): past the high water mark %d or referenced twice", id, overflow, c.m.Pages)
	}
	return &span{r: c.r, off: int64(id * c.m.PageSize), b: b, size: (overflow + 1) * c.m.PageSize}, nil
}

// level checks the branch and leaf pages refs (one level of the walk)
// and returns the pages they reference. A big level is split in two
// halves in file order, the second checked on a goroutine of its own
// (under its own guard: a fault is an error on the goroutine that takes
// it) with a copy of the checker that shares the visited bitmap: at 20M
// URLs over 1M hosts the walk was 1 s of an Open on one core.
func (c *checker) level(refs []pageRef) ([]pageRef, error) {
	slices.SortFunc(refs, func(a, b pageRef) int { return cmp.Compare(a.id, b.id) })
	if len(refs) < c.split || c.seen != nil || c.record != nil {
		c.next = nil
		err := c.pages(refs)
		return c.next, err
	}
	half := len(refs) / 2
	w := *c
	w.next, w.reached = nil, 0
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		werr = Guard(func() error { return w.pages(refs[half:]) }, nil)
	}()
	// Even when this half panics (a fault File's Guard turns into
	// an error), the map stays until the other half is done with it.
	defer func() { <-done }()
	c.next = nil
	err := c.pages(refs[:half])
	<-done
	if err == nil {
		err = werr
	}
	c.reached += w.reached
	return append(c.next, w.next...), err
}

// pages checks refs, sorted by id, adding the pages they reference to
// c.next.
func (c *checker) pages(refs []pageRef) error {
	for i := 0; i < len(refs); {
		r := refs[i]
		if r.depth > boltMaxDepth {
			return fmt.Errorf("page %d: tree deeper than %d", r.id, boltMaxDepth)
		}
		if r.id < 2 || r.id >= c.m.Pages {
			return fmt.Errorf("page %d referenced, outside 2..%d", r.id, c.m.Pages-1)
		}
		// A run: the pages from r.id on whose gaps are small, within
		// the high water mark.
		j := i + 1
		for j < len(refs) && refs[j].id < c.m.Pages && refs[j].id-refs[j-1].id <= runGap && refs[j].id-r.id < runPages {
			j++
		}
		run, err := readAt(c.r, int64(r.id*c.m.PageSize), (refs[j-1].id-r.id+1)*c.m.PageSize)
		if err != nil {
			return fmt.Errorf("page %d: %w", r.id, err)
		}
		for _, r := range refs[i:j] {
			at := (r.id - refs[i].id) * c.m.PageSize
			p, err := c.header(r.id, run[at:at+c.m.PageSize:at+c.m.PageSize], PageBranch|PageLeaf)
			if err != nil {
				return err
			}
			if c.seen != nil {
				c.seen(r.id, ne.Uint16(p.b[8:]))
			}
			if err := c.elements(r.id, p, r.depth, r.lo, r.hi); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// freelist checks the freelist page id and returns its page ids (8 bytes
// each, native byte order), which freeIDs checks after the walk.
func (c *checker) freelist(id uint64) ([]byte, error) {
	p, err := c.read(id, PageFreelist)
	if err != nil {
		return nil, fmt.Errorf("freelist: %w", err)
	}
	n, at := uint64(ne.Uint16(p.b[10:])), uint64(PageHeaderSize)
	if n == 0xFFFF {
		n, at = ne.Uint64(p.b[PageHeaderSize:]), PageHeaderSize+8
	}
	if n > (p.size-at)/8 {
		return nil, fmt.Errorf("freelist page %d: %d ids do not fit", id, n)
	}
	b, err := p.at(at, n*8)
	if err != nil {
		return nil, fmt.Errorf("freelist page %d: %w", id, err)
	}
	return b[:len(b):len(b)], nil
}

// elements checks the elements of page p (id 0: inline in a bucket value,
// whose key order bbolt does not check), the inline buckets in it, and
// adds its children and buckets' roots to c.next. Its keys must lie in
// [lo, hi) (nil: unbounded) and ascend, as bbolt's own check demands: its
// open-time walk panics otherwise, and leaves a goroutine reading the map
// behind. (A child's keys are checked against the bounds its parent's
// keys set, which is what orders them across siblings.)
func (c *checker) elements(id uint64, p *span, depth int, lo, hi []byte) error {
	flags, n := ne.Uint16(p.b[8:]), uint64(ne.Uint16(p.b[10:]))
	if p.size < PageHeaderSize+n*ElementSize {
		return fmt.Errorf("page %d: %d elements do not fit in %d bytes", id, n, p.size)
	}
	if flags == PageBranch && n == 0 {
		return fmt.Errorf("page %d: empty branch page", id)
	}
	elems, err := p.at(0, PageHeaderSize+n*ElementSize)
	if err != nil {
		return fmt.Errorf("page %d: %w", id, err)
	}
	elem := func(i uint64) []byte { return elems[PageHeaderSize+i*ElementSize:][:ElementSize] }
	// Bounds first: every key and value must be inside the page before
	// any is read. Plain values are never read (see span).
	keys := make([][]byte, n)
	type ranges struct{ key, ksize, val, vsize uint64 } // offsets in the page
	rs := make([]ranges, n)
	for i := uint64(0); i < n; i++ {
		e := elem(i)
		var pos, ksize, vsize uint64
		if flags == PageBranch {
			pos, ksize = uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:]))
		} else {
			pos, ksize, vsize = uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		}
		k := PageHeaderSize + i*ElementSize + pos
		if k+ksize+vsize > p.size {
			return fmt.Errorf("page %d: element %d (pos %d, key %d, value %d bytes) outside the page", id, i, pos, ksize, vsize)
		}
		rs[i] = ranges{k, ksize, k + ksize, vsize}
	}
	for i, r := range rs {
		if keys[i], err = p.at(r.key, r.ksize); err != nil {
			return fmt.Errorf("page %d: %w", id, err)
		}
		if flags == PageBranch {
			keys[i] = bytes.Clone(keys[i]) // bounds of the next level, past this page's buffer
		}
	}
	prev := lo
	for i := uint64(0); i < n; i++ {
		key := keys[i]
		if id != 0 {
			cmp := 0
			if prev != nil {
				cmp = bytes.Compare(prev, key)
			}
			if cmp > 0 || (i > 0 && cmp == 0) || (hi != nil && bytes.Compare(key, hi) >= 0) {
				return fmt.Errorf("page %d: key %d (%x) out of order", id, i, key)
			}
		}
		if flags == PageBranch {
			next := hi
			if i+1 < n {
				next = keys[i+1]
			}
			c.next = append(c.next, pageRef{id: ne.Uint64(elem(i)[8:]), depth: depth + 1, lo: key, hi: next})
		}
		prev = key
		if flags == PageBranch {
			continue
		}
		if c.record != nil && ne.Uint32(elem(i))&boltBucketLeaf == 0 {
			v, err := p.at(rs[i].val, rs[i].vsize)
			if err != nil {
				return fmt.Errorf("page %d: %w", id, err)
			}
			c.record(key, v)
		}
		if ne.Uint32(elem(i))&boltBucketLeaf != 0 {
			v, err := p.at(rs[i].val, rs[i].vsize)
			if err != nil {
				return fmt.Errorf("page %d: %w", id, err)
			}
			if err := c.bucket(id, i, v, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// bucket checks a bucket value found in element i of page id.
func (c *checker) bucket(id, i uint64, v []byte, depth int) error {
	if len(v) < 16 {
		return fmt.Errorf("page %d: bucket element %d has a %d-byte value", id, i, len(v))
	}
	if root := ne.Uint64(v[0:]); root != 0 {
		c.next = append(c.next, pageRef{id: root, depth: depth + 1})
		return nil
	}
	inline := v[16:]
	if len(inline) < PageHeaderSize || ne.Uint16(inline[8:]) != PageLeaf {
		return fmt.Errorf("page %d: inline bucket of element %d is not a leaf page", id, i)
	}
	return c.elements(0, &span{b: inline, size: uint64(len(inline))}, depth+1, nil, nil)
}
