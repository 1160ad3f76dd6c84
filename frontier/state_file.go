package frontier

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"sync/atomic"
)

// Checking a state file before bbolt maps it.
//
// bbolt trusts its file: it maps it and follows page ids, element offsets
// and lengths as pointers into the map. A file truncated below its data
// faults (SIGBUS, a fatal error no recover can catch), a garbled page
// panics, sometimes on a goroutine of bbolt's own (the walk that rebuilds
// the freelist on open of a file that has none). checkFile
// reads the meta pages with plain reads, then the rest through a
// read-only map of its own that it touches only below the high water mark
// checked against the file's size, under guard (so a fault, the file
// truncated meanwhile or an I/O error, is ErrCorrupt on its own
// goroutine, where bbolt's walk would crash the process), and checks
// what bbolt would follow: the meta pages (magic, version, checksum, page
// size, high water mark against the file size), then every page reachable from the
// root: its id within the high water mark and referenced once, its header
// naming it, a branch or leaf page, every element's key and value inside
// the page, keys ascending within the bounds their parents set, bucket
// values (inline ones included) well formed; of a page with overflow
// pages it reads only the first page and the keys and bucket values
// beyond it (see span). That is everything bbolt's
// open-time walk verifies: when that walk finds a problem it panics on
// the opening goroutine while its own walking goroutine goes on reading
// the map, which faults once the map is gone. guard still turns any
// panic or fault on the opening goroutine into ErrCorrupt.
//
// The bbolt layout it reads (bbolt 1.x, format version 2, native byte
// order): a page is a 16-byte header (id u64, flags u16, count u16,
// overflow u32) then its data, over 1 + overflow pages. Pages 0 and 1
// are meta pages: after the header, magic u32 (0xED0CDAED), version u32
// (2), page size u32, flags u32, root bucket (root page u64, sequence
// u64), freelist page u64 (all ones: none), high water page id u64, txid
// u64, FNV-64a checksum of the 56 bytes before it. A branch element is
// (pos u32, key size u32, child page u64), a leaf element (flags u32, pos
// u32, key size u32, value size u32); pos counts from the element itself.
// A leaf element with flag 1 is a bucket: its value is (root page u64,
// sequence u64), followed, when the root is 0, by the bucket's own leaf
// page inline.

const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltHeaderSize   = 16
	boltElemSize     = 16
	boltMetaSize     = 64
	boltBranch       = 0x01
	boltLeaf         = 0x02
	boltFreelist     = 0x10
	boltBucketLeaf   = 0x01
	boltNoFreelist   = ^uint64(0)
	boltMaxDepth     = 256
	boltMinPageSize  = 512
	boltMaxPageSize  = 1 << 20
	boltFallbackPage = 4096 // bbolt's fallback for a bad first meta page: os.Getpagesize()
)

var ne = binary.NativeEndian

// boltMeta is one decoded meta page.
type boltMeta struct {
	pageSize uint64
	root     uint64
	freelist uint64
	hwm      uint64 // high water mark: pages [0, hwm) are in use
	txid     uint64
	slot     uint64 // the meta page it is: 0 or 1
}

// FileInfo describes a state file as checkFile found it.
type FileInfo struct {
	Size     int64
	PageSize uint64
	Pages    uint64 // the high water mark
	TxID     uint64
	Reached  uint64 // pages reachable from the root (meta and freelist pages included)
	Freelist bool   // the meta page names a freelist page (Close writes one; see commitFinalLocked)
	Free     uint64 // page ids in the freelist page
}

// checkFile checks the bbolt structure of the file at path (see above).
// A missing or empty file is fine (Open creates it). Problems are errors
// wrapping ErrCorrupt that name the file.
func checkFile(path string) (FileInfo, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return FileInfo{}, nil
	}
	if err != nil {
		return FileInfo{}, fmt.Errorf("frontier: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return FileInfo{}, fmt.Errorf("frontier: %w", err)
	}
	if st.Size() == 0 {
		return FileInfo{}, nil
	}
	c := fileChecker{r: f, size: st.Size()}
	var info FileInfo
	if m, unmap := mapFile(f, st.Size()); m != nil {
		// Read through a map: no copy per page (the copies of plain
		// reads were most of checkFile's time on a 2 GiB file). It only
		// touches pages below the high water mark, checked against the
		// file's size first; a fault (the file truncated meanwhile, an
		// I/O error) is a panic guard turns into ErrCorrupt.
		c.r = m
		err = guard(func() (err error) {
			info, err = c.check()
			return err
		})
		unmap()
	} else {
		info, err = c.check()
	}
	if err != nil {
		return info, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	return info, nil
}

// metaSum is the checksum of meta page data p (after the page header):
// FNV-64a of its first 56 bytes.
func metaSum(p []byte) uint64 {
	h := fnv.New64a()
	h.Write(p[:56])
	return h.Sum64()
}

type fileChecker struct {
	r       io.ReaderAt
	size    int64
	m       boltMeta
	visited []uint64 // bitmap of page ids reached
	reached uint64
	seen    func(id uint64, flags uint16) // tests: called for each branch and leaf page reached
	record  func(key, value []byte)       // tests: called for each key and value in a leaf reached
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
// checkFile's time (208,000 reads at 20M URLs over 1M hosts).
const (
	runGap   = 8   // pages: a hole up to this size is read through
	runPages = 256 // pages: the largest read
)

func (c *fileChecker) check() (FileInfo, error) {
	info := FileInfo{Size: c.size}
	m, err := c.meta()
	if err != nil {
		return info, err
	}
	c.m = m
	info.PageSize, info.Pages, info.TxID = m.pageSize, m.hwm, m.txid
	if need := m.hwm * m.pageSize; m.hwm > uint64(c.size) || need > uint64(c.size) {
		return info, fmt.Errorf("file is %d bytes, but its meta page says %d pages of %d bytes (%d bytes): truncated below its data", c.size, m.hwm, m.pageSize, m.hwm*m.pageSize)
	}
	if m.hwm < 3 {
		return info, fmt.Errorf("meta page high water mark %d", m.hwm)
	}
	c.visited = make([]uint64, (m.hwm+63)/64)
	c.mark(0, 0)
	c.mark(1, 0)
	var free []byte
	if m.freelist != boltNoFreelist {
		if free, err = c.freelist(m.freelist); err != nil {
			return info, err
		}
	}
	level := []pageRef{{id: m.root}}
	for len(level) > 0 {
		if level, err = c.level(level); err != nil {
			return info, err
		}
	}
	info.Reached = c.reached
	if m.freelist != boltNoFreelist {
		info.Freelist, info.Free = true, uint64(len(free)/8)
		if err := c.freeIDs(free); err != nil {
			return info, err
		}
		// bbolt's own check (frontier check) reports a page neither
		// reached nor free; so does this one, so that Open refuses what
		// check calls inconsistent.
		if info.Reached+info.Free != m.hwm {
			return info, fmt.Errorf("%d pages reached and %d free of %d below the high water mark: a page neither in use nor free (a garbled freelist)", info.Reached, info.Free, m.hwm)
		}
	}
	return info, nil
}

// freeIDs checks the page ids of a freelist page (free, 8 bytes each)
// against the walk: bbolt hands a free page to the next write, so a
// freelist that names a page in use, or one past the high water mark,
// would have it overwritten. (It marks them as mark marks reached pages;
// check has taken Reached before.)
func (c *fileChecker) freeIDs(free []byte) error {
	for i := 0; i < len(free); i += 8 {
		if id := ne.Uint64(free[i:]); !c.mark(id, 0) {
			return fmt.Errorf("freelist names page %d: past the high water mark %d, in use, or named twice", id, c.m.hwm)
		}
	}
	return nil
}

// meta finds the meta page bbolt would use: the valid one with the higher
// txid, the page size from page 0 if it is valid, else from page 1 at
// bbolt's fallback offset.
func (c *fileChecker) meta() (boltMeta, error) {
	m0, err0 := c.readMeta(0)
	pageSize := uint64(boltFallbackPage)
	if err0 == nil {
		pageSize = m0.pageSize
	} else if m, err := c.readMeta(boltFallbackPage); err == nil {
		pageSize = m.pageSize
	}
	m1, err1 := c.readMeta(int64(pageSize))
	switch {
	case err0 != nil && err1 != nil:
		return boltMeta{}, fmt.Errorf("no valid meta page, not a bbolt file or both meta pages destroyed (page 0: %v; page 1: %v)", err0, err1)
	case err0 == nil && err1 == nil && m1.pageSize != m0.pageSize:
		return boltMeta{}, fmt.Errorf("meta pages disagree on the page size: %d and %d", m0.pageSize, m1.pageSize)
	case err1 != nil || (err0 == nil && m0.txid >= m1.txid):
		return m0, nil
	default:
		m1.slot = 1
		return m1, nil
	}
}

func (c *fileChecker) readMeta(off int64) (boltMeta, error) {
	var b [boltHeaderSize + boltMetaSize]byte
	if off+int64(len(b)) > c.size {
		return boltMeta{}, fmt.Errorf("file is %d bytes, too short for a meta page at %d", c.size, off)
	}
	if _, err := c.r.ReadAt(b[:], off); err != nil {
		return boltMeta{}, err
	}
	p := b[boltHeaderSize:]
	switch {
	case ne.Uint32(p[0:]) != boltMagic:
		return boltMeta{}, fmt.Errorf("bad magic %08x", ne.Uint32(p[0:]))
	case ne.Uint32(p[4:]) != boltVersion:
		return boltMeta{}, fmt.Errorf("bbolt format version %d, want %d", ne.Uint32(p[4:]), boltVersion)
	}
	if sum, want := ne.Uint64(p[56:]), metaSum(p); sum != want {
		return boltMeta{}, fmt.Errorf("meta checksum %016x, want %016x", sum, want)
	}
	m := boltMeta{
		pageSize: uint64(ne.Uint32(p[8:])), root: ne.Uint64(p[16:]),
		freelist: ne.Uint64(p[32:]), hwm: ne.Uint64(p[40:]), txid: ne.Uint64(p[48:]),
	}
	if m.pageSize < boltMinPageSize || m.pageSize > boltMaxPageSize || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("page size %d", m.pageSize)
	}
	return m, nil
}

// mark records pages id..id+overflow as reached; it reports whether they
// are in range and were not reached before.
func (c *fileChecker) mark(id, overflow uint64) bool {
	if id >= c.m.hwm || overflow >= c.m.hwm-id {
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

// span is a page with its overflow pages as checkFile reads it: the
// first bytes at once, the rest only where a check needs them (keys and
// bucket values), never the bytes of plain values. A value's bytes are
// nothing bbolt follows, and the 1 MiB chunks of a 1e9 filter are more
// than half of a big file: reading them made checkFile cost per byte of
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
	if m, ok := r.(mappedFile); ok {
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

// mappedFile is a read-only map of a state file: checkFile reads it
// without copying (see checkFile).
type mappedFile []byte

func (m mappedFile) ReadAt(b []byte, off int64) (int, error) {
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
func (c *fileChecker) read(id uint64, wantFlags uint16) (*span, error) {
	if id < 2 || id >= c.m.hwm {
		return nil, fmt.Errorf("page %d referenced, outside 2..%d", id, c.m.hwm-1)
	}
	b, err := readAt(c.r, int64(id*c.m.pageSize), c.m.pageSize)
	if err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	return c.header(id, b, wantFlags)
}

// header checks the header of page id, whose first page is b, and marks
// its pages reached.
func (c *fileChecker) header(id uint64, b []byte, wantFlags uint16) (*span, error) {
	if got := ne.Uint64(b[0:]); got != id {
		return nil, fmt.Errorf("page %d: its header says page %d", id, got)
	}
	flags := ne.Uint16(b[8:])
	ok := flags == wantFlags
	if wantFlags == boltBranch|boltLeaf { // either, not both
		ok = flags == boltBranch || flags == boltLeaf
	}
	if !ok {
		return nil, fmt.Errorf("page %d: flags %#x, want %#x", id, flags, wantFlags)
	}
	overflow := uint64(ne.Uint32(b[12:]))
	if !c.mark(id, overflow) {
		return nil, fmt.Errorf("page %d (+%d overflow): past the high water mark %d or referenced twice", id, overflow, c.m.hwm)
	}
	return &span{r: c.r, off: int64(id * c.m.pageSize), b: b, size: (overflow + 1) * c.m.pageSize}, nil
}

// parallelRefs is the fewest pages of a level that level splits between
// two goroutines (a variable for tests).
var parallelRefs = 256

// level checks the branch and leaf pages refs (one level of the walk)
// and returns the pages they reference. A big level is split in two
// halves in file order, the second checked on a goroutine of its own
// (under its own guard: a fault is an error on the goroutine that takes
// it) with a copy of the checker that shares the visited bitmap: at 20M
// URLs over 1M hosts the walk was 1 s of an Open on one core.
func (c *fileChecker) level(refs []pageRef) ([]pageRef, error) {
	slices.SortFunc(refs, func(a, b pageRef) int { return cmp.Compare(a.id, b.id) })
	if len(refs) < parallelRefs || c.seen != nil || c.record != nil {
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
		werr = guard(func() error { return w.pages(refs[half:]) })
	}()
	// Even when this half panics (a fault checkFile's guard turns into
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
func (c *fileChecker) pages(refs []pageRef) error {
	for i := 0; i < len(refs); {
		r := refs[i]
		if r.depth > boltMaxDepth {
			return fmt.Errorf("page %d: tree deeper than %d", r.id, boltMaxDepth)
		}
		if r.id < 2 || r.id >= c.m.hwm {
			return fmt.Errorf("page %d referenced, outside 2..%d", r.id, c.m.hwm-1)
		}
		// A run: the pages from r.id on whose gaps are small, within
		// the high water mark.
		j := i + 1
		for j < len(refs) && refs[j].id < c.m.hwm && refs[j].id-refs[j-1].id <= runGap && refs[j].id-r.id < runPages {
			j++
		}
		run, err := readAt(c.r, int64(r.id*c.m.pageSize), (refs[j-1].id-r.id+1)*c.m.pageSize)
		if err != nil {
			return fmt.Errorf("page %d: %w", r.id, err)
		}
		for _, r := range refs[i:j] {
			at := (r.id - refs[i].id) * c.m.pageSize
			p, err := c.header(r.id, run[at:at+c.m.pageSize:at+c.m.pageSize], boltBranch|boltLeaf)
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
func (c *fileChecker) freelist(id uint64) ([]byte, error) {
	p, err := c.read(id, boltFreelist)
	if err != nil {
		return nil, fmt.Errorf("freelist: %w", err)
	}
	n, at := uint64(ne.Uint16(p.b[10:])), uint64(boltHeaderSize)
	if n == 0xFFFF {
		n, at = ne.Uint64(p.b[boltHeaderSize:]), boltHeaderSize+8
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
func (c *fileChecker) elements(id uint64, p *span, depth int, lo, hi []byte) error {
	flags, n := ne.Uint16(p.b[8:]), uint64(ne.Uint16(p.b[10:]))
	if p.size < boltHeaderSize+n*boltElemSize {
		return fmt.Errorf("page %d: %d elements do not fit in %d bytes", id, n, p.size)
	}
	if flags == boltBranch && n == 0 {
		return fmt.Errorf("page %d: empty branch page", id)
	}
	elems, err := p.at(0, boltHeaderSize+n*boltElemSize)
	if err != nil {
		return fmt.Errorf("page %d: %w", id, err)
	}
	elem := func(i uint64) []byte { return elems[boltHeaderSize+i*boltElemSize:][:boltElemSize] }
	// Bounds first: every key and value must be inside the page before
	// any is read. Plain values are never read (see span).
	keys := make([][]byte, n)
	type ranges struct{ key, ksize, val, vsize uint64 } // offsets in the page
	rs := make([]ranges, n)
	for i := uint64(0); i < n; i++ {
		e := elem(i)
		var pos, ksize, vsize uint64
		if flags == boltBranch {
			pos, ksize = uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:]))
		} else {
			pos, ksize, vsize = uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		}
		k := boltHeaderSize + i*boltElemSize + pos
		if k+ksize+vsize > p.size {
			return fmt.Errorf("page %d: element %d (pos %d, key %d, value %d bytes) outside the page", id, i, pos, ksize, vsize)
		}
		rs[i] = ranges{k, ksize, k + ksize, vsize}
	}
	for i, r := range rs {
		if keys[i], err = p.at(r.key, r.ksize); err != nil {
			return fmt.Errorf("page %d: %w", id, err)
		}
		if flags == boltBranch {
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
		if flags == boltBranch {
			next := hi
			if i+1 < n {
				next = keys[i+1]
			}
			c.next = append(c.next, pageRef{id: ne.Uint64(elem(i)[8:]), depth: depth + 1, lo: key, hi: next})
		}
		prev = key
		if flags == boltBranch {
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
func (c *fileChecker) bucket(id, i uint64, v []byte, depth int) error {
	if len(v) < 16 {
		return fmt.Errorf("page %d: bucket element %d has a %d-byte value", id, i, len(v))
	}
	if root := ne.Uint64(v[0:]); root != 0 {
		c.next = append(c.next, pageRef{id: root, depth: depth + 1})
		return nil
	}
	inline := v[16:]
	if len(inline) < boltHeaderSize || ne.Uint16(inline[8:]) != boltLeaf {
		return fmt.Errorf("page %d: inline bucket of element %d is not a leaf page", id, i)
	}
	return c.elements(0, &span{b: inline, size: uint64(len(inline))}, depth+1, nil, nil)
}

// guard runs fn with memory faults turned into panics, and turns a panic
// (a fault, or one of bbolt's on a garbled file) into an error wrapping
// ErrCorrupt. Only panics on the calling goroutine are caught: checkFile
// must have run first so that bbolt's own goroutines (its open-time page
// walk) find nothing to fault on.
func guard(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	return fn()
}
